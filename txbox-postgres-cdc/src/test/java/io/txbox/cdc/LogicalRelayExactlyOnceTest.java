package io.txbox.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.Delivery;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.kafka.KafkaExactlyOncePublisher;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.FencedException;
import io.txbox.spi.Metrics;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The logical relay with {@code delivery exactly-once}, in this process, against a real Kafka. */
class LogicalRelayExactlyOnceTest {
  private final KafkaBroker kafka = KafkaBroker.shared();
  private LogicalDatabase db;
  private String topic;

  @BeforeEach
  void setUp() {
    db = LogicalDatabase.fresh();
    topic = "cdc-eos-" + UUID.randomUUID();
    kafka.createTopic(topic, 1);
  }

  @AfterEach
  void tearDown() {
    db.close();
  }

  @Test
  void anUnreadableEventIsDeadLetteredInTheTransactionAndTheEventsAroundItArriveOnce() throws Exception {
    Outbox outbox = db.walOutbox();
    Map<Metrics.TransactionOutcome, AtomicInteger> outcomes = new ConcurrentHashMap<>();
    Metrics counting = new Metrics() {
      @Override
      public void transaction(String subscription, TransactionOutcome outcome) {
        outcomes.computeIfAbsent(outcome, o -> new AtomicInteger()).incrementAndGet();
      }
    };
    try (LogicalRelay relay = db.relay(exactlyOnce()).delivery(Delivery.EXACTLY_ONCE).metrics(counting).build().start()) {
      db.commit(outbox, event("k", "before"));
      db.exec("SELECT pg_logical_emit_message(true, 'txbox', 'not an envelope'::bytea)");
      db.commit(outbox, event("k", "after"));
      assertThat(payloads(read(r -> r.size() >= 2))).containsExactly("before", "after");
      assertThat(db.deadLetters()).isOne();
      await().atMost(Duration.ofSeconds(10)).until(() -> relay.pending() == 0);
    }
    assertThat(outcomes.get(Metrics.TransactionOutcome.COMMITTED)).as("transactions committed").hasPositiveValue();
    assertThat(outcomes).doesNotContainKeys(Metrics.TransactionOutcome.ABORTED, Metrics.TransactionOutcome.FENCED);
  }

  @Test
  void aStreamerFrozenWithABatchInHandIsFencedByTheRelayThatStreamsTheSlotAfterIt() throws Exception {
    Outbox outbox = db.walOutbox();
    try (KafkaExactlyOncePublisher zombie = exactlyOnce()) {
      // What a relay frozen mid-batch holds: the slot's transactional id, and a batch sent, not committed.
      zombie.start(db.schema, "logical", 1, null);
      assertThat(zombie.publish(List.of(event("k", "zombie"))).failures()).isEmpty();
      try (LogicalRelay relay = db.relay(exactlyOnce()).delivery(Delivery.EXACTLY_ONCE).build().start()) {
        await().atMost(Duration.ofSeconds(30)).until(relay::isStreaming);
        db.commit(outbox, event("k", "live"));
        assertThat(payloads(read(r -> r.size() >= 1))).containsExactly("live");
        assertThatThrownBy(() -> zombie.commit(Map.of(0, new Checkpoint(Long.MAX_VALUE, 1))))
            .isInstanceOf(FencedException.class);
        db.commit(outbox, event("k", "after the zombie woke"));
        assertThat(payloads(read(r -> r.size() >= 2))).containsExactly("live", "after the zombie woke");
      }
    }
  }

  /**
   * What a failover to a standby without the slot leaves (PostgreSQL before 17): no slot, and a
   * checkpoint taken on the former timeline. The next relay makes the slot again and relays from
   * the table what the checkpoint does not cover. Stopped a third of the way through, that
   * catch-up is taken up by the next relay where Kafka says it stood, in its first snapshot:
   * nothing is sent twice.
   */
  @Test
  void aCatchUpFromTheTableStoppedHalfwayIsTakenUpWhereItStoodAndSendsNothingTwice() throws Exception {
    Outbox outbox = db.tableOutbox();
    try (LogicalRelay first = db.relay(exactlyOnce()).delivery(Delivery.EXACTLY_ONCE)
        .checkpointInterval(Duration.ofMillis(100)).build().start()) {
      db.commit(outbox, event("k", "streamed"));
      java.time.Instant committed = java.time.Instant.now();
      read(r -> r.size() >= 1);
      await().atMost(Duration.ofSeconds(30)).until(() -> checkpointTakenAfter(committed));
    }
    int rows = 600;
    db.exec("INSERT INTO " + db.store.operator().outboxTable() + " (id, key, type, destination, payload, content_type, headers,"
        + " created_at) SELECT gen_random_uuid(), 'k' || i % 17, 'Test', '" + topic + "', convert_to(i::text, 'UTF8'),"
        + " 'text/plain', '{}'::jsonb, now() FROM generate_series(1, " + rows + ") i");
    db.exec("SELECT pg_drop_replication_slot('" + db.schema + "')"); // the rows are in no slot now
    db.exec("UPDATE " + db.store.tables().slotCheckpoint() + " SET timeline = timeline - 1"); // the former primary's
    try (LogicalRelay stopped = db.relay(exactlyOnce()).delivery(Delivery.EXACTLY_ONCE).batchSize(1).build().start()) {
      read(r -> r.size() >= 1 + rows / 3);
    }
    try (LogicalRelay next = db.relay(exactlyOnce()).delivery(Delivery.EXACTLY_ONCE).build().start()) {
      List<TopicReader.Received> got = read(r -> TopicReader.distinctIds(r).size() >= 1 + rows);
      assertThat(TopicReader.distinctIds(got)).hasSize(1 + rows);
      assertThat(got).as("no event twice").hasSize(1 + rows);
    }
  }

  private boolean checkpointTakenAfter(java.time.Instant instant) throws Exception {
    try (java.sql.Connection c = db.dataSource.getConnection();
        java.sql.PreparedStatement p = c.prepareStatement("SELECT marked_at FROM "
            + db.store.tables().slotCheckpoint() + " WHERE slot = ?")) {
      p.setString(1, db.schema);
      try (java.sql.ResultSet rs = p.executeQuery()) {
        return rs.next() && rs.getTimestamp(1).toInstant().isAfter(instant);
      }
    }
  }

  @Test
  void aPublisherThatCannotPublishTransactionallyIsRefusedNamingWhatToUse() {
    LogicalRelay.Builder b = db.relay(KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .delivery(Delivery.EXACTLY_ONCE);
    assertThatThrownBy(b::build).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("delivery exactly-once needs a publisher that publishes transactionally")
        .hasMessageContaining("KafkaExactlyOncePublisher");
  }

  private KafkaExactlyOncePublisher exactlyOnce() {
    return KafkaExactlyOncePublisher.builder().bootstrapServers(kafka.bootstrapServers())
        .transactionalIdPrefix("eos-" + db.schema + "-").build();
  }

  private Message event(String key, String payload) {
    return Message.builder().destination(topic).key(key).type("Test").payload(payload.getBytes(StandardCharsets.UTF_8))
        .build();
  }

  /** Reads the topic as a read_committed consumer until {@code enough}, then a moment longer for any copy. */
  private List<TopicReader.Received> read(java.util.function.Predicate<List<TopicReader.Received>> enough) {
    try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      reader.readUntil(enough, Duration.ofSeconds(60));
      return reader.readUntil(r -> false, Duration.ofSeconds(1));
    }
  }

  private static List<String> payloads(List<TopicReader.Received> records) {
    return records.stream().map(r -> new String(r.value(), StandardCharsets.UTF_8)).toList();
  }
}
