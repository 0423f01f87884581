package io.txbox.mariadb;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.RetryPolicy;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestMariaDb;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The relay on the MariaDB store, into a real Kafka broker: the late-commit case end to end. */
class MariaDbRelayToKafkaTest {
  private final KafkaBroker kafka = KafkaBroker.shared();
  private TestMariaDb db;
  private MariaDbOutboxStore store;
  private Outbox outbox;
  private String topic;
  private final Map<String, List<String>> sentByKey = new LinkedHashMap<>();

  @BeforeEach
  void setUp() {
    db = TestMariaDb.create();
    store = MariaDbOutboxStore.builder(db.dataSource()).buckets(16).build();
    store.migrate();
    outbox = Outbox.create(store.writer());
    topic = "t-" + UUID.randomUUID();
    kafka.createTopic(topic, 4);
  }

  @AfterEach
  void tearDown() {
    db.close();
  }

  @Test
  void aTransactionHeldOpenEightSecondsWhileAThousandLaterEventsCommitIsDeliveredWithThemInOrder() throws Exception {
    try (Relay relay = relay().start(); Connection late = db.dataSource().getConnection();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      late.setAutoCommit(false);
      Message first = event("late-key", 0);
      outbox.send(late, first); // takes its position now, commits last
      long openedAt = System.nanoTime();
      for (int i = 1; i <= 1_000; i++) {
        commit(event(i % 10 == 0 ? "late-key" : "key-" + (i % 7), i));
      }
      Duration left = Duration.ofSeconds(8).minusNanos(System.nanoTime() - openedAt);
      List<TopicReader.Received> during = reader.readUntil(r -> false, left.isNegative() ? Duration.ZERO : left);
      late.commit();
      sentByKey.computeIfAbsent("late-key", k -> new ArrayList<>()).add(0, first.id().toString());

      List<TopicReader.Received> after = reader.readUntil(
          r -> TopicReader.distinctIds(r).size() >= 1_001 - TopicReader.distinctIds(during).size(), Duration.ofSeconds(60));
      List<TopicReader.Received> all = new ArrayList<>(during);
      all.addAll(after);
      assertThat(TopicReader.distinctIds(all)).hasSize(1_001);
      assertThat(TopicReader.firstDeliveriesByKey(all)).isEqualTo(sentByKey);
      assertThat(TopicReader.distinctIds(during)).as("nothing after the open transaction's position jumps it")
          .doesNotContain(sentByKey.get("late-key").get(1));
    }
  }

  private Relay relay() {
    KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers())
        .property("delivery.timeout.ms", "6000").property("request.timeout.ms", "2000").build();
    return Relay.builder(store.relay(), publisher)
        .batchSize(100)
        .idleInterval(Duration.ofMillis(20))
        .heartbeatInterval(Duration.ofMillis(200))
        .leaseDuration(Duration.ofSeconds(2))
        .retryPolicy(RetryPolicy.builder().initialDelay(Duration.ofMillis(20)).maxDelay(Duration.ofMillis(500)).build())
        .build();
  }

  private Message event(String key, int seq) {
    return Message.builder().type("Test").destination(topic).key(key)
        .payload((key + ":" + seq).getBytes(StandardCharsets.UTF_8)).build();
  }

  private void commit(Message m) throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.send(c, m);
      c.commit();
    }
    sentByKey.computeIfAbsent(m.key(), k -> new ArrayList<>()).add(m.id().toString());
  }
}
