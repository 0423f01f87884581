package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.testkit.FaultDrill;
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
      assertThat(out.toString()).contains("subscription default: 0 pending", "HEALTHY")
          .as("the relay's instance id, and the part that names this process of it")
          .containsPattern("relay relay-a/[0-9a-f]{8}: 64 buckets");
    }
    schema.send(List.of(event(topic)));

    assertThat(status()).isEqualTo(1);
    assertThat(out.toString()).contains("DEGRADED: subscription default: 1 events pending and no relay holds a lease");
  }

  @FaultDrill
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
        assertThat(status.path("stalledBuckets").get(0).path("relay").asText()).startsWith("relay-b/");
        assertThat(status.path("stalledBuckets").get(0).path("lastError").asText()).isNotBlank();
        assertThat(status.path("problems").get(0).asText()).contains("retrying a failed event");
      } finally {
        kafka.restart();
      }
      JsonNode status = json();
      assertThat(status.path("outboxDeadLetters").get(0).path("count").asLong()).isEqualTo(1);
      assertThat(status.path("outboxDeadLetters").get(0).path("newestError").asText())
          .as("why, in the status itself").contains("topic no-such-topic does not exist");
      assertThat(status.path("inboxDeadLetters").get(0).path("consumer").asText()).isEqualTo("billing");
      assertThat(status.path("inboxDeadLetters").get(0).path("dead").asLong()).isEqualTo(1);
      await().atMost(Duration.ofSeconds(60)).until(() -> status() == 0);
    }
  }

  @Test
  void theJsonStatusEscapesBidiOverridesAndControlCharactersAWriterPutInAnError() throws Exception {
    schema.deadLetter("k", "T", "gnp.\u202Eexe\u0007\u001b[31m", new byte[] {1});

    status("--json");

    assertThat(out.toString()).doesNotContain("\u202E", "\u0007", "\u001b").contains("\\u202E", "\\u001B");
    assertThat(new ObjectMapper().readTree(out.toString()).path("outboxDeadLetters").get(0).path("newestError").asText())
        .as("the same text, once decoded").isEqualTo("gnp.\u202Eexe\u0007\u001b[31m");
  }

  @Test
  void aRelayTheBrokerKeepsFencingIsNamedAndDegradesTheStatus() throws Exception {
    schema.store.relay().openSubscription("default");
    schema.store.relay().heartbeat("default", "relay-c/0a1b2c3d", Duration.ofSeconds(30));
    schema.store.relay().heartbeat("default", "relay-d/4e5f6a7b", Duration.ofSeconds(30));
    schema.store.relay().recordFence("default", "relay-d/4e5f6a7b");
    assertThat(status()).as("one fence is a take-over").isZero();
    assertThat(out.toString()).contains("fenced: subscription default relay relay-d/4e5f6a7b: 1 time(s), last at ")
        .doesNotContain("keeps losing");
    for (int i = 0; i < 3; i++) {
      schema.store.relay().recordFence("default", "relay-c/0a1b2c3d");
    }

    assertThat(status()).isEqualTo(1);
    assertThat(out.toString())
        .containsPattern("fenced: subscription default relay relay-c/0a1b2c3d: 3 time\\(s\\), last at \\S+: it keeps losing")
        .contains("DEGRADED: subscription default: 1 relay(s) fenced 3 or more times, the last within 15 minutes");
    JsonNode fenced = json().path("fencedRelays");
    assertThat(fenced).hasSize(2);
    assertThat(fenced.get(0).path("relay").asText()).isEqualTo("relay-c/0a1b2c3d");
    assertThat(fenced.get(0).path("fences").asInt()).isEqualTo(3);
  }

  @Test
  void eventsWaitingWhileNoRelayHasEverStartedAreDegraded() throws Exception {
    schema.send(List.of(event("orders"), event("orders")));
    assertThat(status()).isEqualTo(1);
    assertThat(out.toString()).contains("no subscription yet: no relay has started on these tables; 2 events wait for one")
        .contains("DEGRADED: 2 events wait in the outbox and no relay has ever started on these tables");
    assertThat(json().path("healthy").asBoolean()).isFalse();
  }

  @Test
  void aSchemaWithoutTxboxTablesIsAWrongSettingNamedInOneLineAndAnUnreachableDatabaseIsNotDegraded() {
    String[] noTables = {"status", "--jdbc-url", TestDatabase.jdbcUrl(), "--schema", "no_such_schema"};
    assertThat(execute(noTables)).isEqualTo(2);
    assertThat(out.toString().strip()).doesNotContain("\n")
        .contains("invalid --schema or --table-prefix (TXBOX_SCHEMA, TXBOX_TABLE_PREFIX): no txbox tables at");
    String[] unreachable = {"status", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere"};
    assertThat(execute(unreachable)).as("could not look: neither healthy (0) nor degraded (1)").isEqualTo(3);
    assertThat(out.toString()).contains("cannot connect to the database");
  }

  @Test
  void theTransactionHoldingDeliveryBackIsShownByPidUserDatabaseAndStateWithANonNegativeAge() throws Exception {
    try (java.sql.Connection open = schema.db.dataSource().getConnection()) {
      open.setAutoCommit(false);
      int pid;
      try (java.sql.Statement s = open.createStatement();
          java.sql.ResultSet rs = s.executeQuery("SELECT pg_backend_pid(), pg_current_xact_id()")) {
        rs.next();
        pid = rs.getInt(1);
      }
      // Shown once open a second: a shorter one is the database's ordinary traffic.
      await().atMost(Duration.ofSeconds(10)).until(() -> {
        status();
        return out.toString().contains("oldest open transaction: pid " + pid);
      });
      assertThat(out.toString()).contains("oldest open transaction: pid " + pid + ", open PT")
          .contains("postgres@").contains("idle in transaction").contains("its query: SELECT pg_backend_pid()");
      JsonNode tx = json().path("oldestOpenTransaction");
      assertThat(tx.path("pid").asInt()).isEqualTo(pid);
      assertThat(tx.path("state").asText()).isEqualTo("idle in transaction");
      assertThat(tx.path("age").asText()).doesNotContain("-");
      open.rollback();
    }
  }

  private int execute(String... args) {
    CommandLine cli = TxboxCommand.commandLine(args, Map.of());
    out = new StringWriter();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(out, true));
    return cli.execute(args);
  }

  private Relay relay(KafkaBroker kafka, String instance) {
    return Relay.builder(schema.store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
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
