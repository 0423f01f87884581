package io.txbox.kafka;

import static io.txbox.kafka.OutboxFixture.event;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Inbox;
import io.txbox.InboxBatchHandler;
import io.txbox.InboxHandler;
import io.txbox.InboxQueue;
import io.txbox.Message;
import io.txbox.RetryPolicy;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.testkit.ChildProcess;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.KafkaBroker;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KafkaSubscriberTest {
  private final KafkaBroker kafka = KafkaBroker.shared();
  private OutboxFixture fixture;
  private Inbox inbox;
  private String topic;

  @BeforeEach
  void setUp() throws SQLException {
    fixture = new OutboxFixture(8);
    inbox = Inbox.create(fixture.db.dataSource(), PostgresInboxStore.builder().schema(fixture.db.schema()).build());
    topic = "sub-" + UUID.randomUUID();
    kafka.createTopic(topic, 1);
    try (Connection c = fixture.db.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + fixture.db.schema() + ".side_effect"
          + " (seq bigserial, consumer text, message_id uuid)");
    }
  }

  @AfterEach
  void tearDown() {
    fixture.close();
  }

  private InboxHandler writeSideEffect(String consumer) {
    return (tx, message, key) -> {
      try (PreparedStatement p = tx.prepareStatement(
          "INSERT INTO " + fixture.db.schema() + ".side_effect (consumer, message_id) VALUES (?, ?)")) {
        p.setString(1, consumer);
        p.setObject(2, message.id());
        p.executeUpdate();
      }
    };
  }

  private KafkaSubscriber subscriber(String consumer, InboxHandler handler) {
    return KafkaSubscriber.builder(inbox, consumer, handler)
        .bootstrapServers(kafka.bootstrapServers())
        .topics(topic)
        .property("session.timeout.ms", "6000") // a killed member leaves the group quickly
        .property("heartbeat.interval.ms", "1000")
        .retryPolicy(RetryPolicy.builder().initialDelay(Duration.ofMillis(20)).maxDelay(Duration.ofMillis(200)).build())
        .build();
  }

  private List<Message> publish(List<Message> messages) {
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build()) {
      assertThat(publisher.publish(messages).failures()).isEmpty();
    }
    return messages;
  }

  private List<Message> events(int count) {
    List<Message> events = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      events.add(event(topic, "key-" + (i % 7), i));
    }
    return events;
  }

  private int sideEffects(String where) throws SQLException {
    return fixture.count("SELECT count(*) FROM {schema}.side_effect WHERE " + where);
  }

  @Test
  void twoConsumersOfOneTopicEachApplyEveryEventOnceDespiteResends() throws Exception {
    List<Message> sent = publish(events(200));
    publish(sent.subList(50, 120)); // a relay re-sending after a crash
    try (KafkaSubscriber inventory = subscriber("inventory", writeSideEffect("inventory")).start();
        KafkaSubscriber loyalty = subscriber("loyalty", writeSideEffect("loyalty")).start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> inventory.duplicates() + inventory.processed() == 270
          && loyalty.duplicates() + loyalty.processed() == 270);
      assertThat(inventory.processed()).isEqualTo(200);
      assertThat(inventory.duplicates()).isEqualTo(70);
      assertThat(loyalty.processed()).isEqualTo(200);
    }
    assertThat(sideEffects("consumer = 'inventory'")).isEqualTo(200);
    assertThat(sideEffects("consumer = 'loyalty'")).isEqualTo(200);
    assertThat(fixture.count("SELECT count(DISTINCT message_id) FROM {schema}.side_effect")).isEqualTo(200);
  }

  @Test
  void recordsOfOnePollAreTakenInFewTransactionsAndOneByOneWithBatchSizeOne() throws Exception {
    List<Message> sent = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      sent.add(event(topic, "one-key", i)); // one partition
    }
    publish(sent);
    try (KafkaSubscriber batched = subscriber("batched", writeSideEffect("batched")).start();
        KafkaSubscriber single = KafkaSubscriber.builder(inbox, "single", writeSideEffect("single"))
            .bootstrapServers(kafka.bootstrapServers()).topics(topic).batchSize(1).build().start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> batched.processed() == 60 && single.processed() == 60);
    }
    // now() is the transaction's start: one value per transaction
    assertThat(fixture.count("SELECT count(DISTINCT processed_at) FROM {schema}.txbox_inbox WHERE consumer = 'batched'"))
        .as("transactions for 60 records of one partition").isLessThanOrEqualTo(10);
    assertThat(fixture.count("SELECT count(DISTINCT processed_at) FROM {schema}.txbox_inbox WHERE consumer = 'single'"))
        .isEqualTo(60);
    assertThat(sideEffects("consumer = 'batched'")).isEqualTo(60);
  }

  @Test
  void aBatchHandlerTakesWholeBatchesAndOnePoisonMessageIsFoundOneAtATime() throws Exception {
    List<Message> sent = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      sent.add(event(topic, "one-key", i));
    }
    Message poison = sent.get(17);
    publish(sent);
    List<Integer> batchSizes = new CopyOnWriteArrayList<>();
    InboxBatchHandler insertAll = (tx, messages) -> {
      batchSizes.add(messages.size());
      for (Message m : messages) {
        if (m.id().equals(poison.id())) {
          throw new IllegalArgumentException("poison"); // permanent for the policy below
        }
        writeSideEffect("archive").handle(tx, m, "");
      }
    };
    try (KafkaSubscriber archive = KafkaSubscriber.builder(inbox, "archive", insertAll)
        .bootstrapServers(kafka.bootstrapServers()).topics(topic)
        .retryPolicy(RetryPolicy.builder().permanentWhen(e -> e instanceof IllegalArgumentException).build())
        .build().start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> archive.processed() == 17 && archive.parked() == 22);
      assertThat(archive.deadLettered()).isEqualTo(1);
    }
    assertThat(batchSizes).as("a whole batch first").anyMatch(size -> size > 1);
    assertThat(sideEffects("consumer = 'archive'")).as("the messages before the poison").isEqualTo(17);
  }

  @Test
  void concurrentConsumersShareThePartitionsAndKeepEachKeysOrder() throws Exception {
    String wide = "sub-wide-" + UUID.randomUUID();
    kafka.createTopic(wide, 8);
    List<Message> sent = new ArrayList<>();
    for (int i = 0; i < 400; i++) {
      sent.add(event(wide, "key-" + (i % 20), i));
    }
    publish(sent);
    Set<String> threads = ConcurrentHashMap.newKeySet();
    InboxHandler recordThread = (tx, message, key) -> {
      threads.add(Thread.currentThread().getName());
      Thread.sleep(20); // 8 s of work on one thread: time for the group to spread the partitions
      writeSideEffect("inventory").handle(tx, message, key);
    };
    try (KafkaSubscriber inventory = KafkaSubscriber.builder(inbox, "inventory", recordThread)
        .bootstrapServers(kafka.bootstrapServers()).topics(wide).concurrency(4)
        .property("max.poll.records", "100") // partitions move between polls: the first may not take all 400
        .build().start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> inventory.processed() == 400);
    }
    assertThat(threads).as("partitions handled by several consumers").hasSizeGreaterThan(1);
    assertThat(sideEffects("true")).isEqualTo(400);
    List<String> applied = new ArrayList<>();
    try (Connection c = fixture.db.dataSource().getConnection(); Statement s = c.createStatement();
        var rs = s.executeQuery("SELECT message_id FROM " + fixture.db.schema() + ".side_effect ORDER BY seq")) {
      while (rs.next()) {
        applied.add(rs.getString(1));
      }
    }
    for (int k = 0; k < 20; k++) {
      String key = "key-" + k;
      List<String> expected = sent.stream().filter(m -> m.key().equals(key)).map(m -> m.id().toString()).toList();
      assertThat(applied.stream().filter(expected::contains).toList()).as(key).isEqualTo(expected);
    }
  }

  @Test
  void aQueueSubscriberStoresAtOnceAndTheWorkersApplyEachEventOnceInOrderPerKey() throws Exception {
    List<Message> sent = publish(events(100));
    publish(sent.subList(10, 30)); // re-sent
    publish(List.of(Message.builder().type("T").destination(topic).key("key-1")
        .header(InboxQueue.SEQUENCE_HEADER, "first").payload(new byte[0], "application/json").build()));
    InboxQueue queue = InboxQueue.builder(fixture.db.dataSource(),
        PostgresInboxStore.builder().schema(fixture.db.schema()).build(), "billing", writeSideEffect("billing"))
        .build().start();
    try (queue; KafkaSubscriber billing = KafkaSubscriber.builder(queue)
        .bootstrapServers(kafka.bootstrapServers()).topics(topic).build().start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> queue.processed() == 100 && billing.rejected() == 1);
      assertThat(billing.processed()).as("queued").isEqualTo(100);
      assertThat(billing.duplicates()).isEqualTo(20);
    }
    assertThat(sideEffects("consumer = 'billing'")).isEqualTo(100);
    List<String> applied = new ArrayList<>();
    try (Connection c = fixture.db.dataSource().getConnection(); Statement s = c.createStatement();
        var rs = s.executeQuery("SELECT message_id FROM " + fixture.db.schema() + ".side_effect ORDER BY seq")) {
      while (rs.next()) {
        applied.add(rs.getString(1));
      }
    }
    for (int k = 0; k < 7; k++) {
      String key = "key-" + k;
      List<String> expected = sent.stream().filter(m -> m.key().equals(key)).map(m -> m.id().toString()).toList();
      assertThat(applied.stream().filter(expected::contains).toList()).as(key).isEqualTo(expected);
    }
  }

  @FaultDrill
  @Test
  void aHandlerThatCrashesIsRetriedAndTheEventAppliedOnceInOrder() throws Exception {
    List<Message> sent = publish(events(20));
    UUID flaky = sent.get(5).id();
    Set<UUID> failedOnce = ConcurrentHashMap.newKeySet();
    InboxHandler crashesOnce = (tx, message, key) -> {
      writeSideEffect("inventory").handle(tx, message, key);
      if (message.id().equals(flaky) && failedOnce.add(flaky)) {
        throw new IllegalStateException("crash inside the handler, after its write");
      }
    };
    try (KafkaSubscriber inventory = subscriber("inventory", crashesOnce).start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> inventory.processed() == 20);
    }
    assertThat(failedOnce).containsExactly(flaky);
    assertThat(sideEffects("true")).isEqualTo(20);
    List<String> applied = new ArrayList<>();
    try (Connection c = fixture.db.dataSource().getConnection(); Statement s = c.createStatement();
        var rs = s.executeQuery("SELECT message_id FROM " + fixture.db.schema() + ".side_effect ORDER BY seq")) {
      while (rs.next()) {
        applied.add(rs.getString(1));
      }
    }
    assertThat(applied).containsExactlyElementsOf(sent.stream().map(m -> m.id().toString()).toList());
  }

  @Test
  void aConsumerKilledAfterTheInboxCommitButBeforeTheOffsetCommitAppliesNothingTwice(@TempDir Path dir)
      throws Exception {
    List<Message> sent = publish(List.of(event(topic, "k", 1), event(topic, "k", 2),
        Message.builder().type("Test").destination(topic).key("k")
            .payload("k:3:hang".getBytes(java.nio.charset.StandardCharsets.UTF_8)).build()));
    Process child = ChildProcess.start(List.of("-Xmx128m"), SubscriberProcess.class.getName(),
        List.of(kafka.bootstrapServers(), topic, fixture.db.schema(), "inventory"), dir.resolve("subscriber.log"));
    try {
      // The first two are committed in the database; the third hangs before the offsets are committed.
      await().atMost(Duration.ofSeconds(60)).until(() -> sideEffects("true") == 2);
      child.destroyForcibly();
      assertThat(child.waitFor(10, TimeUnit.SECONDS)).isTrue();
    } finally {
      child.destroyForcibly();
    }
    try (KafkaSubscriber again = subscriber("inventory", writeSideEffect("inventory")).start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> again.processed() + again.duplicates() == 3);
      assertThat(again.duplicates()).as("redelivered after the crash, recognised by the inbox").isEqualTo(2);
      assertThat(again.processed()).isEqualTo(1);
    }
    assertThat(sideEffects("true")).isEqualTo(3);
    assertThat(fixture.count("SELECT count(DISTINCT message_id) FROM {schema}.side_effect")).isEqualTo(3);
  }

  @Test
  void anEventOfAnAbortedKafkaTransactionIsNeverAppliedUnlessReadUncommittedIsAskedFor() throws Exception {
    Message aborted = event(topic, "key-a", 99);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(java.util.Map.of("bootstrap.servers",
        kafka.bootstrapServers(), "transactional.id", "aborting-" + topic), new ByteArraySerializer(),
        new ByteArraySerializer())) {
      producer.initTransactions();
      producer.beginTransaction();
      producer.send(io.txbox.kafka.internal.RecordMessages.toRecord(topic, aborted)).get();
      producer.abortTransaction(); // what a fenced or failed exactly-once round leaves in the log
    }
    publish(events(3));

    try (KafkaSubscriber inventory = subscriber("inventory", writeSideEffect("inventory")).start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> inventory.processed() == 3);
      assertThat(sideEffects("message_id = '" + aborted.id() + "'")).as("by default: read_committed").isZero();
    }
    try (KafkaSubscriber told = KafkaSubscriber.builder(inbox, "audit", writeSideEffect("audit"))
        .bootstrapServers(kafka.bootstrapServers()).topics(topic).property("isolation.level", "read_uncommitted")
        .build().start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> told.processed() == 4);
      assertThat(sideEffects("consumer = 'audit' AND message_id = '" + aborted.id() + "'")).isEqualTo(1);
    }
  }

  @Test
  void anUnreadableRecordIsSkippedAndLaterOnesFlow() throws Exception {
    RecordHeaders garbage = new RecordHeaders();
    garbage.add(KafkaPublisher.ID_HEADER, "not-a-uuid".getBytes());
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
        java.util.Map.of("bootstrap.servers", kafka.bootstrapServers()), new ByteArraySerializer(), new ByteArraySerializer())) {
      producer.send(new ProducerRecord<>(topic, null, null, "k".getBytes(), "x".getBytes(), garbage)).get();
    }
    publish(events(3));
    try (KafkaSubscriber inventory = subscriber("inventory", writeSideEffect("inventory")).start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> inventory.processed() == 3);
      assertThat(inventory.rejected()).isEqualTo(1);
    }
  }
}
