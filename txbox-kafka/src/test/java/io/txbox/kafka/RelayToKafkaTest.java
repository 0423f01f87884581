package io.txbox.kafka;

import static io.txbox.kafka.OutboxFixture.event;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class RelayToKafkaTest {
  private final KafkaBroker kafka = KafkaBroker.shared();
  private OutboxFixture fixture;
  private String topic;

  @BeforeEach
  void setUp() {
    fixture = new OutboxFixture(16);
    topic = "t-" + UUID.randomUUID();
    kafka.createTopic(topic, 4);
  }

  @AfterEach
  void tearDown() {
    fixture.close();
  }

  @Test
  void everyCommittedEventArrivesOnceInOrderPerKeyWithItsHeaders() throws Exception {
    fixture.commitMany(topic, 500, 7);
    Map<String, List<String>> expected = fixture.expectedByKey(topic);
    try (Relay relay = fixture.relay(kafka.bootstrapServers()).build().start()) {
      List<TopicReader.Received> got = OutboxFixture.readAll(kafka.bootstrapServers(), topic, 500);
      assertThat(TopicReader.firstDeliveriesByKey(got)).isEqualTo(expected);
      assertThat(got).hasSize(500); // no crash, so no re-sends
      assertThat(got.get(0).headers()).containsEntry("txbox-type", "Test").containsEntry("txbox-version", "1")
          .containsEntry("content-type", Message.DEFAULT_CONTENT_TYPE).containsKey("txbox-id");
    }
  }

  @Test
  void aTransactionOpenAcrossRelayRoundsIsStillDeliveredInOrderForItsKey() throws Exception {
    fixture.commit(event(topic, "before", 0));
    try (Relay relay = fixture.relay(kafka.bootstrapServers()).build().start();
        Connection late = fixture.db.dataSource().getConnection()) {
      OutboxFixture.readAll(kafka.bootstrapServers(), topic, 1);
      late.setAutoCommit(false);
      Message first = event(topic, "k", 1);
      fixture.outbox.send(late, first); // takes its log position now, commits last
      fixture.commit(event(topic, "k", 2), event(topic, "other", 3));
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
        // Many relay rounds (idle interval 20 ms) pass while the transaction stays open.
        List<TopicReader.Received> during = reader.readUntil(r -> false, Duration.ofSeconds(2));
        assertThat(TopicReader.distinctIds(during)).hasSize(1);
        late.commit();
        List<TopicReader.Received> after =
            reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 4, Duration.ofSeconds(30));
        assertThat(TopicReader.firstDeliveriesByKey(after)).isEqualTo(fixture.expectedByKey(topic));
        assertThat(TopicReader.firstDeliveriesByKey(after).get("k").get(0)).isEqualTo(first.id().toString());
      }
    }
  }

  @Test
  void aRolledBackTransactionSendsNothing() throws Exception {
    Message rolledBack = event(topic, "k", 1);
    try (Connection c = fixture.db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      fixture.outbox.send(c, rolledBack);
      c.rollback();
    }
    fixture.commit(event(topic, "k", 2));
    try (Relay relay = fixture.relay(kafka.bootstrapServers()).build().start()) {
      List<TopicReader.Received> got = OutboxFixture.readAll(kafka.bootstrapServers(), topic, 1);
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
        got = reader.readUntil(r -> false, Duration.ofSeconds(1));
      }
      assertThat(TopicReader.distinctIds(got)).hasSize(1).doesNotContain(rolledBack.id().toString());
    }
  }

  @Test
  void poisonEventsAreDeadLetteredAndLaterEventsOfTheSameBucketKeepFlowing() throws Exception {
    String missingTopic = "no-such-topic-" + UUID.randomUUID();
    Message unknownTopic = event(missingTopic, "p", 1);
    Message tooLarge = Message.builder().type("Big").destination(topic).key("p")
        .payload(new byte[2 * 1024 * 1024]).build();
    fixture.commit(event(topic, "p", 0), unknownTopic, tooLarge, event(topic, "p", 3));
    fixture.commitMany(topic, 50, 5);
    try (Relay relay = fixture.relay(kafka.bootstrapServers()).build().start()) {
      List<TopicReader.Received> got = OutboxFixture.readAll(kafka.bootstrapServers(), topic, 52);
      assertThat(TopicReader.distinctIds(got)).hasSize(52)
          .doesNotContain(unknownTopic.id().toString(), tooLarge.id().toString());
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(
          fixture.count("SELECT count(*) FROM {schema}.txbox_dead_letter")).isEqualTo(2));
      assertThat(fixture.count("SELECT count(*) FROM {schema}.txbox_dead_letter WHERE id = '"
          + unknownTopic.id() + "' AND error LIKE '%does not exist%' AND attempts = 1")).isEqualTo(1);
      assertThat(fixture.count("SELECT count(*) FROM {schema}.txbox_dead_letter WHERE id = '"
          + tooLarge.id() + "' AND error LIKE '%max.message.bytes%' AND error LIKE '%max.request.size%'")).isEqualTo(1);
    }
  }

  @Test
  void aGracefulStopFinishesTheRoundAndGivesTheBucketsBack() throws Exception {
    fixture.commitMany(topic, 300, 10);
    Relay relay = fixture.relay(kafka.bootstrapServers()).build().start();
    OutboxFixture.readAll(kafka.bootstrapServers(), topic, 1);
    relay.close();
    assertThat(relay.isRunning()).isFalse();
    assertThat(fixture.count("SELECT count(*) FROM {schema}.txbox_subscription WHERE owner IS NOT NULL")).isZero();
    try (Relay next = fixture.relay(kafka.bootstrapServers()).build().start()) {
      List<TopicReader.Received> got = OutboxFixture.readAll(kafka.bootstrapServers(), topic, 300);
      assertThat(TopicReader.firstDeliveriesByKey(got)).isEqualTo(fixture.expectedByKey(topic));
    }
  }

  @Test
  void rowsThatBreakTheMessageRulesAreDeadLetteredOneByOneAndEveryOtherEventFlows() throws Exception {
    fixture.commit(event(topic, "bad", 0));
    // Rows from before the database checked them (schema version 4), as a plain-SQL writer left them.
    fixture.execute("ALTER TABLE {schema}.txbox_outbox DROP CONSTRAINT txbox_outbox_valid");
    String insert = "INSERT INTO {schema}.txbox_outbox (key, type, version, destination, payload, headers)"
        + " VALUES (%s, %s, %s, '" + topic + "', '\\x00', %s)";
    fixture.execute(insert.formatted("'bad'", "''", "1", "'{}'"));
    fixture.execute(insert.formatted("'bad'", "'T'", "0", "'{}'"));
    fixture.execute(insert.formatted("repeat('k', 300)", "'T'", "1", "'{}'"));
    fixture.execute(insert.formatted("'bad'", "'T'", "1", "'[1,2]'"));
    fixture.execute(insert.formatted("'bad'", "'T'", "1", "'null'"));
    fixture.commit(event(topic, "bad", 6));
    fixture.commitMany(topic, 200, 20);
    try (Relay relay = fixture.relay(kafka.bootstrapServers()).build().start()) {
      List<TopicReader.Received> got = OutboxFixture.readAll(kafka.bootstrapServers(), topic, 202);
      assertThat(TopicReader.distinctIds(got)).hasSize(202);
      assertThat(TopicReader.firstDeliveriesByKey(got).get("bad")).hasSize(2);
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(
          fixture.count("SELECT count(*) FROM {schema}.txbox_dead_letter")).isEqualTo(5));
      assertThat(fixture.count("SELECT count(*) FROM {schema}.txbox_dead_letter WHERE error LIKE"
          + " 'unreadable row: event %' AND (error LIKE '%type must not be null or blank%'"
          + " OR error LIKE '%version must be >= 1, was 0%' OR error LIKE '%key must be at most 255%'"
          + " OR error LIKE '%headers are not a JSON object%')")).isEqualTo(5);
    }
  }

  @Test
  void theDatabaseRefusesARowThatBreaksTheMessageRulesNamingTheRule() {
    assertThatThrownBy(() -> fixture.execute("INSERT INTO {schema}.txbox_outbox (type, destination, payload)"
        + " VALUES (' ', 'd', '\\x00')"))
        .hasMessageContaining("txbox_outbox_type_valid");
    assertThatThrownBy(() -> fixture.execute("INSERT INTO {schema}.txbox_outbox (type, destination, payload,"
        + " headers) VALUES ('T', 'd', '\\x00', '[1]')"))
        .hasMessageContaining("txbox_outbox_headers_valid");
  }

  @Test
  void bucketsMovingBetweenRelaysAndBackReSendNothing() throws Exception {
    try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic);
        Relay first = fixture.relay(kafka.bootstrapServers()).instanceId("a").build().start()) {
      fixture.commitMany(topic, 300, 30);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 300, Duration.ofSeconds(60));
      try (Relay second = fixture.relay(kafka.bootstrapServers()).instanceId("b").build().start()) {
        await().atMost(Duration.ofSeconds(20)).until(() -> second.ownedBuckets().size() == 8);
        fixture.commitMany(topic, 300, 30);
        reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 600, Duration.ofSeconds(60));
      } // gives its buckets back: the first relay takes them again
      await().atMost(Duration.ofSeconds(20)).until(() -> first.ownedBuckets().size() == 16);
      fixture.commitMany(topic, 300, 30);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 900, Duration.ofSeconds(60));
      List<TopicReader.Received> got = reader.readUntil(r -> false, Duration.ofSeconds(2)); // stragglers
      assertThat(TopicReader.distinctIds(got)).hasSize(900);
      assertThat(got).as("a clean rebalance re-sends nothing").hasSize(900);
    }
  }
}
