package io.txbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;

/**
 * An event larger than its topic's {@code max.message.bytes}, in a transaction with smaller events
 * of its key and beside other keys and topics. The Kafka client cannot split a refused batch below
 * {@code batch.size} (262,144 here), so without care one such event wedges the producer for every
 * topic (KAFKA-8350).
 */
class KafkaWedgeTest {
  private static final int LIMIT = 2000;

  @Test
  void anOverSizeEventIsDeadLetteredNamingItsTopicAndLimitWhileEverythingElseFlowsOnce() throws Exception {
    KafkaBroker kafka = KafkaBroker.shared();
    String small = "small-" + UUID.randomUUID();
    String other = "other-" + UUID.randomUUID();
    kafka.createTopic(small, 2, Map.of("max.message.bytes", Integer.toString(LIMIT)));
    kafka.createTopic(other, 2);
    try (OutboxFixture fixture = new OutboxFixture(8);
        Relay relay = fixture.relay(kafka.bootstrapServers()).build().start()) {
      writeOverSizeAmongOthers(fixture, small, other);
      // Well within the publisher's 16 s flush deadline: nothing waits for the refused event.
      assertEverythingElseArrived(kafka, fixture, small, other, 0, Duration.ofSeconds(30));
    }
  }

  /**
   * The topic's limit is lowered while the relay runs, below the limit the publisher read: its
   * producer's batches are refused and split without end until its network thread dies (or the
   * flush deadline passes). The publisher replaces the producer, reads the limit again, and the
   * event is dead-lettered as if the limit had always been low.
   */
  @Test
  void aLimitLoweredUnderARunningRelayIsObeyedOnceTheWedgedProducerIsReplaced() throws Exception {
    KafkaBroker kafka = KafkaBroker.shared();
    String small = "lowered-" + UUID.randomUUID();
    String other = "other-" + UUID.randomUUID();
    kafka.createTopic(small, 2);
    kafka.createTopic(other, 2);
    try (OutboxFixture fixture = new OutboxFixture(8);
        Relay relay = fixture.relay(kafka.bootstrapServers()).build().start()) {
      fixture.commit(OutboxFixture.event(small, "warm-up", 0));
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), small)) {
        reader.readUntil(r -> !r.isEmpty(), Duration.ofSeconds(30)); // the publisher has read the limit
      }
      ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, small);
      kafka.admin().incrementalAlterConfigs(Map.of(topic, List.of(new AlterConfigOp(
          new ConfigEntry("max.message.bytes", Integer.toString(LIMIT)), AlterConfigOp.OpType.SET))))
          .all().get(30, TimeUnit.SECONDS);
      writeOverSizeAmongOthers(fixture, small, other);
      // The batch in flight when the producer wedged is sent again: at most one batch (100) twice.
      // A wedged round fails and waits out the relay's backoff before the next reads the new limit;
      // on a loaded machine that took three rounds (31 s), so the wait leaves room for four.
      assertEverythingElseArrived(kafka, fixture, small, other, 100, Duration.ofSeconds(60));
    }
  }

  /**
   * The producer's network thread dies (here an interceptor throws an {@link Error} on it, as the
   * client's own batch splitting does with {@link StackOverflowError}): the publisher notices within
   * its watch interval, closes the producer and sends again with a new one, instead of waiting out
   * its flush deadline (40 s with these settings) in this round and every later one.
   */
  @Test
  void aProducerWhoseNetworkThreadDiedIsReplacedAtOnce() throws Exception {
    KafkaBroker kafka = KafkaBroker.shared();
    String topic = "dies-" + UUID.randomUUID();
    kafka.createTopic(topic, 2);
    KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers())
        .property("delivery.timeout.ms", "30000")
        .property("interceptor.classes", NetworkThreadKiller.class.getName())
        .build();
    try (OutboxFixture fixture = new OutboxFixture(4);
        Relay relay = Relay.builder(fixture.store.relay(), publisher)
            .idleInterval(Duration.ofMillis(20)).heartbeatInterval(Duration.ofMillis(200)).build().start()) {
      fixture.commit(OutboxFixture.event(topic, "a", 0), OutboxFixture.event(topic, NetworkThreadKiller.KEY, 1));
      fixture.commitMany(topic, 20, 4);
      Map<String, List<String>> expected = fixture.expectedByKey(topic);
      List<TopicReader.Received> got;
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
        got = reader.readUntil(r -> TopicReader.distinctIds(r).size() >= OutboxFixture.total(expected),
            Duration.ofSeconds(25));
      }
      assertThat(NetworkThreadKiller.killed).as("a network thread was killed").isTrue();
      assertThat(TopicReader.firstDeliveriesByKey(got)).isEqualTo(expected);
    }
  }

  /** Throws an {@link Error} on the producer's network thread once, when the record of {@link #KEY} is acknowledged. */
  public static final class NetworkThreadKiller implements ProducerInterceptor<byte[], byte[]> {
    static final String KEY = "kill-the-network-thread";
    static volatile boolean killed;
    private final java.util.Set<Integer> keyed = java.util.concurrent.ConcurrentHashMap.newKeySet();

    @Override
    public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
      if (!killed && record.key() != null && KEY.equals(new String(record.key(), StandardCharsets.UTF_8))) {
        keyed.add(record.partition() == null ? -1 : record.partition());
      }
      return record;
    }

    @Override
    public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
      if (!killed && !keyed.isEmpty() && exception == null) {
        killed = true;
        throw new StackOverflowError("killed by the test: the producer's network thread ends here");
      }
    }

    @Override
    public void close() {}

    @Override
    public void configure(Map<String, ?> configs) {}
  }

  /** Key k: "1", then 5 KB, then "3", in one transaction; then 40 small events on each topic. */
  private static void writeOverSizeAmongOthers(OutboxFixture fixture, String small, String other) throws Exception {
    fixture.commitTogether(payload(small, "k", "1"), payload(small, "k", "x".repeat(5_000)), payload(small, "k", "3"));
    for (int i = 0; i < 40; i++) {
      fixture.commit(OutboxFixture.event(small, "key-" + i % 4, i), OutboxFixture.event(other, "key-" + i % 4, i));
    }
  }

  /** Every event but the 5 KB one arrived {@code within}, in order per key, at most {@code resent} of them twice. */
  private static void assertEverythingElseArrived(KafkaBroker kafka, OutboxFixture fixture, String small,
      String other, int resent, Duration within) throws Exception {
    Map<String, List<String>> expectedSmall = fixture.expectedByKey(small);
    int sendable = OutboxFixture.total(expectedSmall) - 1;
    List<TopicReader.Received> gotSmall;
    try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), small)) {
      gotSmall = reader.readUntil(r -> TopicReader.distinctIds(r).size() >= sendable, within);
    }
    assertThat(TopicReader.distinctIds(gotSmall)).hasSize(sendable);
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() ->
        assertThat(fixture.count("SELECT count(*) FROM {schema}.txbox_dead_letter")).isEqualTo(1));
    assertThat(TopicReader.firstDeliveriesByKey(gotSmall)).as("order per key")
        .isEqualTo(withoutTheOverSizeEvent(expectedSmall, fixture));
    List<TopicReader.Received> gotOther = OutboxFixture.readAll(kafka.bootstrapServers(), other, 40);
    assertThat(TopicReader.distinctIds(gotOther)).hasSize(40);
    assertThat(gotSmall.size() - sendable + gotOther.size() - 40).as("events sent twice").isLessThanOrEqualTo(resent);
    try (Connection c = fixture.db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT key, length(payload), error FROM " + fixture.db.schema() + ".txbox_dead_letter")) {
      rs.next();
      assertThat(rs.getString(1)).isEqualTo("k");
      assertThat(rs.getInt(2)).isEqualTo(5_000);
      assertThat(rs.getString(3)).contains("PermanentPublishException").contains("topic " + small)
          .contains("at most " + LIMIT + " bytes").contains("max.message.bytes").doesNotContain("StackOverflowError");
    }
  }

  private static Map<String, List<String>> withoutTheOverSizeEvent(Map<String, List<String>> expected,
      OutboxFixture fixture) throws Exception {
    String deadId;
    try (Connection c = fixture.db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT id::text FROM " + fixture.db.schema() + ".txbox_dead_letter")) {
      rs.next();
      deadId = rs.getString(1);
    }
    Map<String, List<String>> without = new java.util.LinkedHashMap<>();
    expected.forEach((key, ids) -> without.put(key, ids.stream().filter(id -> !id.equals(deadId)).toList()));
    return without;
  }

  private static Message payload(String topic, String key, String text) {
    return Message.builder().type("Test").destination(topic).key(key).payload(text.getBytes(StandardCharsets.UTF_8)).build();
  }
}
