package io.txbox.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.RetryPolicy;
import io.txbox.TxboxException;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TopicReader;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Poison events, a broker outage, a server without logical WAL, and a slot the server gave up. */
class LogicalRelayFaultsTest {
  private static final Logger log = LoggerFactory.getLogger(LogicalRelayFaultsTest.class);

  @Test
  void anEventTheBrokerRefusesIsDeadLetteredAndItsKeyGoesOn() throws Exception {
    KafkaBroker kafka = KafkaBroker.shared();
    String topic = "cdc-" + UUID.randomUUID();
    kafka.createTopic(topic, 1);
    try (LogicalDatabase db = LogicalDatabase.fresh();
        LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start()) {
      Outbox outbox = db.walOutbox();
      db.commit(outbox, event(topic, "k", "1"), event(topic, "k", "x".repeat(2_000_000)), event(topic, "k", "3"));
      db.commit(outbox, event(topic, "j", "4"));
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
        List<TopicReader.Received> got = reader.readUntil(r -> r.size() >= 3, Duration.ofSeconds(60));
        // Key k's events keep their order around the dead letter; key j never waited for them.
        assertThat(got).filteredOn(r -> r.key().equals("k"))
            .extracting(r -> new String(r.value(), StandardCharsets.UTF_8)).containsExactly("1", "3");
        assertThat(got).filteredOn(r -> r.key().equals("j"))
            .extracting(r -> new String(r.value(), StandardCharsets.UTF_8)).containsExactly("4");
      }
      try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT key, length(payload), error FROM " + db.schema + ".txbox_dead_letter")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).isEqualTo("k");
        assertThat(rs.getInt(2)).isEqualTo(2_000_000); // the whole event is kept
        assertThat(rs.getString(3)).contains("PermanentPublishException").contains("max.request.size");
      }
    }
  }

  /**
   * Kafka stays down until some event has failed more often than the retry policy allows in all
   * (three attempts, at most 200 ms apart): the outage outlasts the whole budget, and still nothing
   * is dead-lettered, because failures count only when the broker acknowledged something else in
   * the same publish (the rule the polling relay follows, {@code RetryBudget}).
   */
  @FaultDrill
  @Test
  void aKafkaOutageLongerThanTheWholeRetryBudgetDeadLettersNothing() throws Exception {
    Map<UUID, AtomicInteger> failures = new ConcurrentHashMap<>();
    Metrics counting = new Metrics() {
      @Override
      public void retrying(String subscription, Message message, int attempts, Throwable error) {
        failures.computeIfAbsent(message.id(), id -> new AtomicInteger()).incrementAndGet();
      }
    };
    RetryPolicy tight = RetryPolicy.builder()
        .initialDelay(Duration.ofMillis(20)).maxDelay(Duration.ofMillis(200)).maxAttempts(3).build();
    try (KafkaBroker kafka = KafkaBroker.start("512m"); LogicalDatabase db = LogicalDatabase.fresh()) {
      kafka.createTopic("orders", 2);
      Outbox outbox = db.walOutbox();
      KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers())
          .property("delivery.timeout.ms", "3000").property("request.timeout.ms", "1000")
          .property("max.block.ms", "1000").build();
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), "orders");
          LogicalRelay relay = db.relay(publisher).retryPolicy(tight).metrics(counting).build().start()) {
        for (int i = 0; i < 100; i++) {
          db.commit(outbox, event("orders", "k" + i % 5, "before-" + i));
        }
        reader.readUntil(r -> r.size() >= 100, Duration.ofSeconds(30));
        log.info("outage test: 100 relayed, stopping Kafka");
        kafka.stop();
        for (int i = 0; i < 200; i++) {
          db.commit(outbox, event("orders", "k" + i % 5, "during-" + i));
        }
        await().atMost(Duration.ofSeconds(120)).until(() ->
            failures.values().stream().anyMatch(n -> n.get() > tight.maxAttempts() + 1));
        assertThat(count(db, "SELECT count(*) FROM " + db.schema + ".txbox_dead_letter"))
            .as("dead-lettered during the outage").isZero();
        assertThat(SlotReport.read(db.dataSource, db.store).problems()).as("txbox status: DEGRADED, as for a bucket")
            .anyMatch(p -> p.startsWith("slot " + db.schema + ": retrying a failed event for "));
        log.info("outage test: retries exhausted with nothing dead-lettered, starting Kafka again");
        kafka.restart();
        log.info("outage test: Kafka serves again");
        List<TopicReader.Received> got =
            reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 300, Duration.ofSeconds(120));
        assertThat(TopicReader.distinctIds(got)).hasSize(300);
        Map<String, List<String>> byKey = TopicReader.firstDeliveriesByKey(got);
        assertThat(byKey).hasSize(5);
        byKey.values().forEach(ids -> assertThat(ids).hasSize(60));
        assertThat(count(db, "SELECT count(*) FROM " + db.schema + ".txbox_dead_letter")).isZero();
        await().atMost(Duration.ofSeconds(30)).until(() -> SlotReport.read(db.dataSource, db.store).problems()
            .stream().noneMatch(p -> p.contains("retrying a failed event")));
      }
    }
  }

  @Test
  void aServerWithoutLogicalWalIsNamedWithTheSettingToChange() {
    // The machine's own PostgreSQL runs with wal_level = replica.
    try (TestDatabase plain = TestDatabase.create()) {
      PostgresOutboxStore store = PostgresOutboxStore.builder(plain.dataSource()).schema(plain.schema()).build();
      LogicalReplication replication = LogicalReplication.builder(plain.dataSource(), store).build();
      assertThatThrownBy(replication::migrate)
          .isInstanceOf(TxboxException.class)
          .hasMessageContaining("wal_level = replica")
          .hasMessageContaining("ALTER SYSTEM SET wal_level = logical");
    }
  }

  @FaultDrill
  @Test
  void anInvalidatedSlotStopsTheRelayLoudlyWithTheRecoverySteps() throws Exception {
    EmbeddedPostgres server = LogicalDatabase.start(Map.of("max_slot_wal_keep_size", "16MB", "wal_keep_size", "0",
        "max_wal_size", "64MB", "min_wal_size", "32MB"));
    String url = server.getJdbcUrl("postgres", "postgres");
    try (var pool = TestDatabase.pool(url, 4)) {
      PostgresOutboxStore store = PostgresOutboxStore.builder(pool).build();
      LogicalReplication replication = LogicalReplication.builder(pool, store).build();
      replication.migrate();
      // No relay streams the slot while 80 MB of WAL are written: the server drops what it keeps.
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE filler (t text)");
        for (int i = 0; i < 8; i++) {
          s.execute("INSERT INTO filler SELECT repeat('x', 1000) FROM generate_series(1, 10000)");
          s.execute("SELECT pg_switch_wal()");
        }
        s.execute("CHECKPOINT");
      }
      await().atMost(Duration.ofSeconds(30)).until(() -> replication.status().orElseThrow().invalidated());

      Properties credentials = new Properties();
      credentials.setProperty("user", "postgres");
      try (LogicalRelay relay = LogicalRelay.builder(replication,
              io.txbox.kafka.KafkaPublisher.builder().bootstrapServers(KafkaBroker.shared().bootstrapServers()).build())
          .connection(url, credentials).build().start()) {
        await().atMost(Duration.ofSeconds(20)).until(relay::isTroubled);
        assertThat(relay.problem()).contains("was invalidated").contains("max_slot_wal_keep_size")
            .contains("txbox replay").contains("txbox logical drop");
        assertThat(relay.isStreaming()).isFalse();
      }
    } finally {
      LogicalDatabase.close(server);
    }
  }

  private static long count(LogicalDatabase db, String sql) throws Exception {
    try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static Message event(String topic, String key, String payload) {
    return Message.builder().destination(topic).key(key).type("Test").payload(payload.getBytes(StandardCharsets.UTF_8)).build();
  }
}
