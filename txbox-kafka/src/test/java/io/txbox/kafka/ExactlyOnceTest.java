package io.txbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.DeadLetter;
import io.txbox.Delivery;
import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.RetryPolicy;
import io.txbox.spi.Backlog;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.FencedException;
import io.txbox.spi.Membership;
import io.txbox.spi.Metrics;
import io.txbox.spi.OpenTransaction;
import io.txbox.spi.PublishResult;
import io.txbox.spi.RelayStore;
import io.txbox.spi.StoredMessage;
import io.txbox.spi.TransactionalPublisher;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.junit.jupiter.api.Test;

/**
 * Exactly-once delivery against a real Kafka and PostgreSQL: what a read_committed consumer sees
 * when relays freeze, lose their buckets or fail between the broker's commit and the store's.
 */
class ExactlyOnceTest {
  private static final String TOPIC_PREFIX = "eos-";

  @Test
  void twoRelaysDeliverEveryEventOnceInOrderPerKeyAndTheBrokerHoldsTheirProgress() throws Exception {
    String topic = TOPIC_PREFIX + UUID.randomUUID();
    String bootstrap = KafkaBroker.shared().bootstrapServers();
    KafkaBroker.shared().createTopic(topic, 4);
    try (OutboxFixture fixture = new OutboxFixture(8)) {
      String subscription = "eos-" + UUID.randomUUID().toString().substring(0, 8);
      fixture.commitMany(topic, 1000, 50);
      try (Relay a = relay(fixture, fixture.store.relay(), bootstrap, subscription).build().start();
          Relay b = relay(fixture, fixture.store.relay(), bootstrap, subscription).build().start()) {
        fixture.commitMany(topic, 1000, 50);
        List<TopicReader.Received> got = readAll(bootstrap, topic, 2000);

        assertDeliveredOnceInOrder(fixture, topic, got, 2000);
      }
    }
  }

  /**
   * Relay A freezes as SIGSTOP freezes a process (its heartbeat and its loop both held) with a
   * round in hand that it has sent and checked its leases for, right before its commit. It stays
   * frozen until its leases run out and relay B took its buckets; then it wakes and commits. Kafka
   * must refuse that commit: B fenced A's transactional id when it took the buckets over, and
   * read their checkpoints back. At-least-once would deliver that round twice.
   */
  @Test
  void aRelayFrozenPastItsLeaseWithARoundInHandIsFencedAndNothingIsReadTwice() throws Exception {
    String topic = TOPIC_PREFIX + UUID.randomUUID();
    String bootstrap = KafkaBroker.shared().bootstrapServers();
    KafkaBroker.shared().createTopic(topic, 4);
    try (OutboxFixture fixture = new OutboxFixture(8)) {
      String subscription = "eos-" + UUID.randomUUID().toString().substring(0, 8);
      Freeze freeze = new Freeze();
      FreezableStore frozenStore = new FreezableStore(fixture.store.relay(), freeze);
      Map<Metrics.TransactionOutcome, AtomicInteger> outcomes = new ConcurrentHashMap<>();
      Relay.Builder frozenRelay = relay(fixture, frozenStore, bootstrap, subscription).metrics(new Metrics() {
        @Override
        public void transaction(String s, Metrics.TransactionOutcome outcome) {
          outcomes.computeIfAbsent(outcome, o -> new AtomicInteger()).incrementAndGet();
        }
      });
      try (Relay a = frozenRelay.build().start()) {
        fixture.commitMany(topic, 300, 30);
        readAll(bootstrap, topic, 300);
        freeze.armed.set(true); // A's next commit freezes it, round in hand
        fixture.commitMany(topic, 200, 30);
        assertThat(freeze.frozen.await(30, TimeUnit.SECONDS)).as("relay A froze before a commit").isTrue();
        try (Relay b = relay(fixture, fixture.store.relay(), bootstrap, subscription).build().start()) {
          await().atMost(Duration.ofSeconds(30)).until(() -> b.ownedBuckets().size() == 8);
          fixture.commitMany(topic, 300, 30);
          readAll(bootstrap, topic, 800);
          freeze.thaw(); // A wakes and commits its round: fenced
          await().atMost(Duration.ofSeconds(30)).until(() -> freeze.commitsAfterThaw.get() > 0);
          fixture.commitMany(topic, 200, 30);
          List<TopicReader.Received> got = readAll(bootstrap, topic, 1000);

          assertThat(freeze.commitFailure.get()).as("A's commit after the freeze").isInstanceOf(FencedException.class);
          assertThat(outcomes.get(Metrics.TransactionOutcome.FENCED)).as("A's fenced transactions").hasPositiveValue();
          assertThat(outcomes.get(Metrics.TransactionOutcome.COMMITTED)).as("A's committed ones").hasPositiveValue();
          assertThat(fixture.store.operator().status(100).fencedRelays()).as("what txbox status lists")
              .singleElement().satisfies(r -> {
                assertThat(r.instance()).isEqualTo(a.member());
                assertThat(r.fences()).isEqualTo(outcomes.get(Metrics.TransactionOutcome.FENCED).get());
              });
          assertDeliveredOnceInOrder(fixture, topic, got, 1000);
        }
      }
    }
  }

  /**
   * The store fails right after Kafka committed a round (its checkpoints not saved): the relay
   * must go on from the broker's checkpoint, not the store's older one.
   */
  @Test
  void aStoreFailureAfterTheBrokerCommittedResendsNothing() throws Exception {
    String topic = TOPIC_PREFIX + UUID.randomUUID();
    String bootstrap = KafkaBroker.shared().bootstrapServers();
    KafkaBroker.shared().createTopic(topic, 4);
    try (OutboxFixture fixture = new OutboxFixture(8)) {
      String subscription = "eos-" + UUID.randomUUID().toString().substring(0, 8);
      FreezableStore failing = new FreezableStore(fixture.store.relay(), null);
      failing.failSaves.set(3);
      try (Relay a = relay(fixture, failing, bootstrap, subscription).build().start()) {
        fixture.commitMany(topic, 500, 20);
        readAll(bootstrap, topic, 500);
        await().atMost(Duration.ofSeconds(10)).until(() -> failing.failSaves.get() == 0);
        // Once the store's checkpoints cover every event, nothing is left to send, again or not.
        await().atMost(Duration.ofSeconds(30)).until(() -> fixture.count("SELECT count(*) FROM {schema}.txbox_outbox o"
            + " JOIN {schema}.txbox_subscription s ON s.bucket = o.bucket AND s.subscription = '" + subscription + "'"
            + " WHERE (o.tx_id, o.position) > (s.tx_id, s.position)") == 0);
        List<TopicReader.Received> got = readAll(bootstrap, topic, 500);

        assertDeliveredOnceInOrder(fixture, topic, got, 500);
      }
    }
  }

  @Test
  void anAtLeastOncePublisherIsRefusedForExactlyOnceNamingWhatToUse() {
    try (OutboxFixture fixture = new OutboxFixture(8)) {
      KafkaPublisher plain = KafkaPublisher.builder().bootstrapServers("localhost:9").build();
      assertThatThrownBy(() -> Relay.builder(fixture.store.relay(), plain).delivery(Delivery.EXACTLY_ONCE).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("KafkaExactlyOncePublisher")
          .hasMessageContaining("KafkaPublisher is not one");
      plain.close();
    }
  }

  /**
   * Two outboxes (two schemas, each with its own id) on one cluster with one transactional-id
   * prefix and one subscription name, so one progress topic: the second one's relay must not go
   * on from the first one's checkpoints, which would skip its events. It sends nothing from those
   * buckets and says why; given a prefix of its own, it delivers every event of its outbox.
   */
  @Test
  void anotherOutboxsProgressIsRefusedAndNoEventOfThisOneIsSkipped() throws Exception {
    String bootstrap = KafkaBroker.shared().bootstrapServers();
    String subscription = "eos-" + UUID.randomUUID().toString().substring(0, 8);
    String shared = "txbox-shared-" + UUID.randomUUID().toString().substring(0, 8) + "-";
    String firstTopic = TOPIC_PREFIX + UUID.randomUUID();
    String secondTopic = TOPIC_PREFIX + UUID.randomUUID();
    KafkaBroker.shared().createTopic(firstTopic, 4);
    KafkaBroker.shared().createTopic(secondTopic, 4);
    try (OutboxFixture first = new OutboxFixture(8); OutboxFixture second = new OutboxFixture(8)) {
      assertThat(first.store.relay().outboxId()).isPresent().isNotEqualTo(second.store.relay().outboxId());
      first.commitMany(firstTopic, 400, 50);
      try (Relay a = relay(first.store.relay(), bootstrap, subscription, shared).build().start()) {
        assertDeliveredOnceInOrder(first, firstTopic, readAll(bootstrap, firstTopic, 400), 400);
      }
      second.commitMany(secondTopic, 100, 50); // fewer than the first: its checkpoints lie beyond them
      try (Relay b = relay(second.store.relay(), bootstrap, subscription, shared).build().start();
          TopicReader reader = TopicReader.open(bootstrap, secondTopic)) {
        await().atMost(Duration.ofSeconds(30)).until(b::isTroubled);
        assertThat(reader.readUntil(r -> false, Duration.ofSeconds(2))).as("sent from another outbox's checkpoints")
            .isEmpty();
      }
      try (Relay b = relay(second.store.relay(), bootstrap, subscription, shared + "second-").build().start()) {
        assertDeliveredOnceInOrder(second, secondTopic, readAll(bootstrap, secondTopic, 100), 100);
      }
    }
  }

  @Test
  void aCheckpointOfAnotherOutboxIsRefusedNamingTheSettingToChange() {
    String bootstrap = KafkaBroker.shared().bootstrapServers();
    String subscription = "eos-" + UUID.randomUUID().toString().substring(0, 8);
    String prefix = "txbox-ids-" + UUID.randomUUID().toString().substring(0, 8) + "-";
    try (KafkaExactlyOncePublisher mine = publisher(bootstrap, prefix);
        KafkaExactlyOncePublisher theirs = publisher(bootstrap, prefix);
        KafkaExactlyOncePublisher older = publisher(bootstrap, prefix)) {
      theirs.start(subscription, "theirs", 4, "5d3c1f0e-0000-4000-8000-000000000001");
      theirs.takeOver(Collections.singletonMap(0, null), List.of("theirs"));
      theirs.commit(Map.of(0, new Checkpoint(7, 1000)));

      mine.start(subscription, "mine", 4, "5d3c1f0e-0000-4000-8000-000000000002");
      assertThatThrownBy(() -> mine.takeOver(Map.of(0, "theirs"), List.of("mine")))
          .hasMessageContaining("a checkpoint of another outbox (5d3c1f0e-0000-4000-8000-000000000001;"
              + " this outbox is 5d3c1f0e-0000-4000-8000-000000000002)")
          .hasMessageContaining("--kafka-transactional-id-prefix");
      older.start(subscription, "older", 4, null); // a store without an id takes any checkpoint, as before
      assertThat(older.takeOver(Map.of(0, "theirs"), List.of("older"))).containsEntry(0, new Checkpoint(7, 1000));
    }
  }

  /**
   * 64 buckets share a new progress topic's eight partitions: each bucket's last checkpoint is read
   * back from among the others' records, even when a busier bucket of its partition wrote hundreds
   * since; and a topic made before, with one partition per bucket, is read as it was written.
   */
  @Test
  void bucketsSharingAProgressPartitionAreEachReadBackFromTheirOwnLastCheckpoint() throws Exception {
    String bootstrap = KafkaBroker.shared().bootstrapServers();
    String subscription = "eos-" + UUID.randomUUID().toString().substring(0, 8);
    String prefix = "txbox-shared-" + UUID.randomUUID().toString().substring(0, 8) + "-";
    try (KafkaExactlyOncePublisher a = publisher(bootstrap, prefix);
        KafkaExactlyOncePublisher b = publisher(bootstrap, prefix);
        Admin admin = KafkaBroker.shared().admin()) {
      a.start(subscription, "a", 64, null);
      assertThat(admin.describeTopics(List.of(a.progressTopic())).allTopicNames().get().get(a.progressTopic())
          .partitions()).hasSize(8);
      Map<Integer, String> unowned = new HashMap<>();
      List.of(3, 11, 19).forEach(bucket -> unowned.put(bucket, null));
      a.takeOver(unowned, List.of("a"));
      a.commit(Map.of(3, new Checkpoint(1, 10), 11, new Checkpoint(1, 11)));
      a.commit(Map.of(3, new Checkpoint(2, 20)));
      for (int i = 0; i < 300; i++) { // bucket 19, in the same partition, pushes them far from its end
        a.commit(Map.of(19, new Checkpoint(3, i)));
      }

      b.start(subscription, "b", 64, null);
      assertThat(b.takeOver(Map.of(3, "a", 11, "a", 19, "a"), List.of("b"))).containsExactly(
          Map.entry(3, new Checkpoint(2, 20)), Map.entry(11, new Checkpoint(1, 11)), Map.entry(19, new Checkpoint(3, 299)));
    }
    String oldLayout = prefix + "per-bucket";
    KafkaBroker.shared().createTopic(oldLayout, 64, Map.of("cleanup.policy", "compact"));
    try (KafkaExactlyOncePublisher a = progressPublisher(bootstrap, prefix, oldLayout);
        KafkaExactlyOncePublisher b = progressPublisher(bootstrap, prefix, oldLayout)) {
      a.start(subscription + "-old", "a", 64, null);
      a.takeOver(Collections.singletonMap(43, null), List.of("a"));
      a.commit(Map.of(43, new Checkpoint(5, 50)));
      b.start(subscription + "-old", "b", 64, null);
      assertThat(b.takeOver(Map.of(43, "a"), List.of("b"))).containsExactly(Map.entry(43, new Checkpoint(5, 50)));
    }
  }

  @Test
  void aNoteKeptBesideACheckpointIsReadBackWithItAndALaterCheckpointWithoutOneDropsIt() throws Exception {
    String bootstrap = KafkaBroker.shared().bootstrapServers();
    String subscription = "eos-" + UUID.randomUUID().toString().substring(0, 8);
    String prefix = "txbox-note-" + UUID.randomUUID().toString().substring(0, 8) + "-";
    try (KafkaExactlyOncePublisher a = publisher(bootstrap, prefix);
        KafkaExactlyOncePublisher b = publisher(bootstrap, prefix)) {
      a.start(subscription, "a", 2, null);
      a.takeOver(Collections.singletonMap(0, null), List.of("a"));
      String large = "x".repeat(200_000);
      a.commit(Map.of(0, new Checkpoint(1, 1), 1, new Checkpoint(1, 2)), Map.of(0, "first;" + large));
      a.commit(Map.of(0, new Checkpoint(2, 1)), Map.of(0, "second"));
      a.abort();
      assertThatThrownBy(() -> a.commit(Map.of(0, new Checkpoint(3, 1)),
          Map.of(0, "y".repeat(TransactionalPublisher.MAX_NOTE_CHARS + 1))))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most");
      assertThatThrownBy(() -> a.commit(Map.of(), Map.of(1, "no checkpoint")))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("with a checkpoint of its bucket");

      b.start(subscription, "b", 2, null);
      assertThat(b.takeOver(Map.of(0, "a", 1, "a"), List.of("b")))
          .containsExactly(Map.entry(0, new Checkpoint(2, 1)), Map.entry(1, new Checkpoint(1, 2)));
      assertThat(b.notes()).containsExactly(Map.entry(0, "second"));
      b.commit(Map.of(0, new Checkpoint(4, 1)));
      b.takeOver(Map.of(0, "b"), List.of("b"));
      assertThat(b.notes()).as("a checkpoint committed without a note has none").isEmpty();
    }
  }

  private static KafkaExactlyOncePublisher progressPublisher(String bootstrap, String prefix, String progressTopic) {
    return KafkaExactlyOncePublisher.builder().bootstrapServers(bootstrap).transactionalIdPrefix(prefix)
        .progressTopic(progressTopic).property("max.block.ms", "5000").build();
  }

  private static KafkaExactlyOncePublisher publisher(String bootstrap, String prefix) {
    return KafkaExactlyOncePublisher.builder().bootstrapServers(bootstrap).transactionalIdPrefix(prefix)
        .property("max.block.ms", "5000").build();
  }

  private static Relay.Builder relay(OutboxFixture fixture, RelayStore store, String bootstrap, String subscription) {
    return relay(store, bootstrap, subscription, "txbox-test-" + fixture.db.schema() + "-");
  }

  private static Relay.Builder relay(RelayStore store, String bootstrap, String subscription, String prefix) {
    TransactionalPublisher kafka = KafkaExactlyOncePublisher.builder().bootstrapServers(bootstrap)
        .transactionalIdPrefix(prefix)
        .property("delivery.timeout.ms", "6000")
        .property("request.timeout.ms", "2000")
        .property("max.block.ms", "5000")
        .build();
    TransactionalPublisher publisher = store instanceof FreezableStore f && f.freeze != null
        ? new FreezingPublisher(kafka, f.freeze) : kafka;
    return Relay.builder(store, publisher)
        .subscription(subscription)
        .delivery(Delivery.EXACTLY_ONCE)
        .batchSize(100)
        .idleInterval(Duration.ofMillis(20))
        .heartbeatInterval(Duration.ofMillis(200))
        .leaseDuration(Duration.ofSeconds(1))
        .retryPolicy(RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(20)).maxDelay(Duration.ofMillis(500)).maxAttempts(3).build());
  }

  private static List<TopicReader.Received> readAll(String bootstrap, String topic, int expected) {
    try (TopicReader reader = TopicReader.open(bootstrap, topic)) {
      return reader.readUntil(r -> TopicReader.distinctIds(r).size() >= expected, Duration.ofSeconds(60));
    }
  }

  private static void assertDeliveredOnceInOrder(OutboxFixture fixture, String topic,
      List<TopicReader.Received> got, int expected) throws Exception {
    assertThat(TopicReader.distinctIds(got)).as("distinct events").hasSize(expected);
    assertThat(got).as("records a read_committed consumer sees (each event once)").hasSize(expected);
    assertThat(TopicReader.firstDeliveriesByKey(got)).isEqualTo(fixture.expectedByKey(topic));
    assertThat(fixture.count("SELECT count(*) FROM {schema}.txbox_dead_letter")).isZero();
  }

  /** A freeze shared by a relay's store (its heartbeat) and its publisher (its commit), as SIGSTOP freezes both. */
  private static final class Freeze {
    final AtomicBoolean armed = new AtomicBoolean();
    final CountDownLatch frozen = new CountDownLatch(1);
    final CountDownLatch thawed = new CountDownLatch(1);
    final AtomicInteger commitsAfterThaw = new AtomicInteger();
    final AtomicReference<RuntimeException> commitFailure = new AtomicReference<>();
    volatile boolean isFrozen;

    void freezeNow() {
      isFrozen = true;
      frozen.countDown();
      waitWhileFrozen();
    }

    void thaw() {
      isFrozen = false;
      thawed.countDown();
    }

    void waitWhileFrozen() {
      if (isFrozen) {
        try {
          thawed.await(2, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  /** The Kafka publisher of a relay whose next commit, once armed, waits out a freeze first. */
  private static final class FreezingPublisher implements TransactionalPublisher {
    private final TransactionalPublisher kafka;
    private final Freeze freeze;

    FreezingPublisher(TransactionalPublisher kafka, Freeze freeze) {
      this.kafka = kafka;
      this.freeze = freeze;
    }

    @Override
    public void start(String subscription, String member, int buckets, String outboxId) {
      kafka.start(subscription, member, buckets, outboxId);
    }

    @Override
    public Map<Integer, Checkpoint> takeOver(Map<Integer, String> previousOwners, Collection<String> liveMembers) {
      return kafka.takeOver(previousOwners, liveMembers);
    }

    @Override
    public PublishResult publish(List<Message> batch) {
      return kafka.publish(batch);
    }

    @Override
    public void commit(Map<Integer, Checkpoint> checkpoints) {
      boolean wasFrozen = freeze.armed.compareAndSet(true, false);
      if (wasFrozen) {
        freeze.freezeNow();
      }
      try {
        kafka.commit(checkpoints);
      } catch (RuntimeException e) {
        if (wasFrozen) {
          freeze.commitFailure.set(e);
        }
        throw e;
      } finally {
        if (wasFrozen) {
          freeze.commitsAfterThaw.incrementAndGet();
        }
      }
    }

    @Override
    public void abort() {
      kafka.abort();
    }

    @Override
    public void close() {
      kafka.close();
    }
  }

  /** The store of a relay whose heartbeat waits out a freeze; or one whose next saves fail. */
  private static final class FreezableStore implements RelayStore {
    private final RelayStore store;
    private final Freeze freeze;
    final AtomicInteger failSaves = new AtomicInteger();

    FreezableStore(RelayStore store, Freeze freeze) {
      this.store = store;
      this.freeze = freeze;
    }

    private void waitWhileFrozen() {
      if (freeze != null) {
        freeze.waitWhileFrozen();
      }
    }

    @Override
    public int openSubscription(String subscription) {
      return store.openSubscription(subscription);
    }

    @Override
    public Membership heartbeat(String subscription, String instance, Duration lease) {
      waitWhileFrozen();
      return store.heartbeat(subscription, instance, lease);
    }

    @Override
    public List<BucketState> claimBuckets(String subscription, String instance, int max, Duration lease) {
      waitWhileFrozen();
      return store.claimBuckets(subscription, instance, max, lease);
    }

    @Override
    public void releaseBuckets(String subscription, String instance, Collection<Integer> buckets) {
      store.releaseBuckets(subscription, instance, buckets);
    }

    @Override
    public void leave(String subscription, String instance) {
      store.leave(subscription, instance);
    }

    @Override
    public List<StoredMessage> read(String subscription, List<BucketRead> reads) {
      return store.read(subscription, reads);
    }

    @Override
    public Set<Integer> saveProgress(String subscription, String instance, List<BucketProgress> progress,
        List<DeadLetter> deadLetters) {
      if (!progress.isEmpty() && failSaves.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
        throw new IllegalStateException("the store failed after the broker committed (a test)");
      }
      return store.saveProgress(subscription, instance, progress, deadLetters);
    }

    @Override
    public AutoCloseable listen(Runnable onAppend) {
      return store.listen(onAppend);
    }

    @Override
    public Optional<Backlog> backlog(String subscription, int limitPerBucket) {
      return store.backlog(subscription, limitPerBucket);
    }

    @Override
    public Optional<OpenTransaction> oldestOpenTransaction() {
      return store.oldestOpenTransaction();
    }

    @Override
    public Optional<String> outboxId() {
      return store.outboxId();
    }

    @Override
    public void recordFence(String subscription, String instance) {
      store.recordFence(subscription, instance);
    }
  }
}
