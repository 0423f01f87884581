package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.jdbc.PostgresInboxStore;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code txbox status} against a real database, relays and Kafka brokers: healthy, relay down, stalled. */
class StatusCommandTest {
  private final OutboxSchema schema = new OutboxSchema();
  private StringWriter out;

  @AfterEach
  void dropSchema() {
    schema.close();
  }

  @Test
  void healthyWhileARelayHoldsTheBucketsAndDegradedWhenEventsWaitForNoRelay() throws Exception {
    KafkaBroker kafka = KafkaBroker.shared();
    String topic = "status-" + UUID.randomUUID();
    kafka.createTopic(topic, 2);
    try (Relay relay = relay(kafka, "relay-a").start()) {
      schema.send(List.of(event(topic)));
      // until the relay has delivered it: pending events with a relay at work are healthy too
      await().atMost(Duration.ofSeconds(30))
          .until(() -> status() == 0 && out.toString().contains("subscription default: 0 pending"));
      assertThat(out.toString()).contains("subscription default: 0 pending", "relay relay-a: 64 buckets", "HEALTHY");
    }
    schema.send(List.of(event(topic)));

    assertThat(status()).isEqualTo(1);
    assertThat(out.toString()).contains("DEGRADED: subscription default: 1 events pending and no relay holds a lease");
  }

  @Test
  void stalledBucketsAndDeadLettersOfBothSidesAreShownAndAStallIsDegraded() throws Exception {
    Inbox.create(schema.db.dataSource(), PostgresInboxStore.builder().schema(schema.name()).build())
        .deadLetter("billing", event("invoices"), new IllegalStateException("no such customer"), 10);
    try (KafkaBroker kafka = KafkaBroker.start("384m");
        Relay relay = relay(kafka, "relay-b").start()) {
      String topic = "status-" + UUID.randomUUID();
      kafka.createTopic(topic, 1);
      schema.send(List.of(event("no-such-topic"))); // permanent: dead-lettered at once
      await().atMost(Duration.ofSeconds(30)).until(() -> json().path("outboxDeadLetters").size() == 1);
      assertThat(status()).as("dead letters alone do not stop delivery").isZero();

      kafka.stop();
      try {
        schema.send(List.of(event(topic)));
        await().atMost(Duration.ofSeconds(60)).until(() -> json().path("stalledBuckets").size() == 1);
        JsonNode status = json();
        assertThat(status.path("healthy").asBoolean()).isFalse();
        assertThat(status.path("stalledBuckets").get(0).path("relay").asText()).isEqualTo("relay-b");
        assertThat(status.path("stalledBuckets").get(0).path("lastError").asText()).isNotBlank();
        assertThat(status.path("problems").get(0).asText()).contains("retrying a failed event");
      } finally {
        kafka.restart();
      }
      JsonNode status = json();
      assertThat(status.path("outboxDeadLetters").get(0).path("count").asLong()).isEqualTo(1);
      assertThat(status.path("inboxDeadLetters").get(0).path("consumer").asText()).isEqualTo("billing");
      assertThat(status.path("inboxDeadLetters").get(0).path("dead").asLong()).isEqualTo(1);
      await().atMost(Duration.ofSeconds(60)).until(() -> status() == 0);
    }
  }

  private Relay relay(KafkaBroker kafka, String instance) {
    return Relay.builder(schema.store, KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .instanceId(instance).idleInterval(Duration.ofMillis(20)).build();
  }

  /** Runs {@code txbox status} on the test's schema; its output is in {@link #out}. */
  private int status(String... more) {
    String[] args = new String[4 + more.length];
    args[0] = "status";
    args[1] = "--jdbc-url";
    args[2] = TestDatabase.jdbcUrl();
    args[3] = "--schema=" + schema.name();
    System.arraycopy(more, 0, args, 4, more.length);
    CommandLine cli = TxboxCommand.commandLine(args, Map.of());
    out = new StringWriter();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(out, true));
    return cli.execute(args);
  }

  private JsonNode json() throws Exception {
    status("--json");
    return new ObjectMapper().readTree(out.toString());
  }

  private static Message event(String topic) {
    return Message.builder().type("OrderPlaced").destination(topic).key("k").payload(new byte[] {1}).build();
  }
}
