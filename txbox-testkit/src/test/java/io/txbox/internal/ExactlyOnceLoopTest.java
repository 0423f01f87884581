package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.Delivery;
import io.txbox.Message;
import io.txbox.RetryPolicy;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.Metrics;
import io.txbox.spi.PublishResult;
import io.txbox.spi.TransactionalPublisher;
import io.txbox.testkit.InMemoryOutboxStore;
import io.txbox.testkit.SettableClock;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The relay loop's exactly-once decisions, on the in-memory store and a broker kept in memory
 * here (what it commits, aborts and holds as checkpoints), driven by the loop's monotonic clock.
 * The same decisions against real Kafka: ExactlyOnceTest in txbox-kafka.
 */
class ExactlyOnceLoopTest {
  private static final Duration LEASE = Duration.ofSeconds(10);
  private final SettableClock databaseClock = new SettableClock(Instant.parse("2026-01-01T00:00:00Z"));
  private final InMemoryOutboxStore store = new InMemoryOutboxStore(1, databaseClock);
  private final AtomicLong nanos = new AtomicLong(5_000_000_000L);
  private final RelaySettings settings = new RelaySettings("s", "a", 100, Duration.ofMillis(1),
      Duration.ofSeconds(2), LEASE, Duration.ZERO, Duration.ofSeconds(1), RetryPolicy.defaults(),
      Delivery.EXACTLY_ONCE);
  private final OwnedBuckets buckets = new OwnedBuckets(nanos::get, settings.leaseValidity().toNanos());
  private final Broker broker = new Broker();
  private final RelayLoop loop = new RelayLoop(settings, store, broker, Metrics.NONE, buckets, new WakeUp(),
      Clock.systemUTC());
  private final BucketLeases leases =
      new BucketLeases(settings, store, Metrics.NONE, buckets, 1, Clock.systemUTC(), nanos::get, () -> {});

  /** A broker in memory: records visible only once committed, and each bucket's committed checkpoint. */
  private final class Broker implements TransactionalPublisher {
    final List<String> visible = new ArrayList<>();
    final Map<Integer, Checkpoint> committed = new HashMap<>();
    final List<Map<Integer, String>> takeOvers = new ArrayList<>();
    /** Each commit: the records it made visible, and the checkpoints it kept with them. */
    final List<Map.Entry<List<String>, Map<Integer, Checkpoint>>> commits = new ArrayList<>();
    private final List<String> open = new ArrayList<>();
    int aborts;
    /** Runs inside the next publish, after the loop checked its leases: a freeze, say. */
    Runnable duringPublish = () -> {};

    @Override
    public void start(String subscription, String member, int bucketCount, String outboxId) {}

    @Override
    public synchronized Map<Integer, Checkpoint> takeOver(Map<Integer, String> previousOwners,
        Collection<String> liveMembers) {
      takeOvers.add(new HashMap<>(previousOwners));
      Map<Integer, Checkpoint> held = new HashMap<>();
      previousOwners.keySet().forEach(b -> {
        if (committed.containsKey(b)) {
          held.put(b, committed.get(b));
        }
      });
      return held;
    }

    @Override
    public synchronized PublishResult publish(List<Message> batch) {
      duringPublish.run();
      duringPublish = () -> {};
      batch.forEach(m -> open.add(m.type()));
      return PublishResult.allAcknowledged(batch.size());
    }

    @Override
    public synchronized void commit(Map<Integer, Checkpoint> checkpoints) {
      commits.add(Map.entry(List.copyOf(open), Map.copyOf(checkpoints)));
      visible.addAll(open);
      open.clear();
      committed.putAll(checkpoints);
    }

    @Override
    public synchronized void abort() {
      if (!open.isEmpty()) {
        aborts++;
      }
      open.clear();
    }

    @Override
    public void close() {}
  }

  @AfterEach
  void stopLoop() {
    loop.stop();
    loop.run();
  }

  private static Message event(String name) {
    return Message.builder().type(name).destination("d").key("k").payload(new byte[0]).build();
  }

  private void rounds() throws InterruptedException {
    for (int i = 0; i < 10 && loop.round(); i++) {
      // a full batch: go on
    }
  }

  @Test
  void aRoundIsCommittedWithItsCheckpointAndTheStoreFollowsTheBroker() throws Exception {
    leases.beat();
    store.add(0, event("e1"));
    Checkpoint e2 = store.add(0, event("e2"));
    rounds();

    assertThat(broker.visible).containsExactly("e1", "e2");
    assertThat(broker.committed).containsEntry(0, e2);
    assertThat(store.checkpoint("s", 0)).isEqualTo(e2);
    assertThat(broker.takeOvers).as("the bucket was taken over once, before its first send").hasSize(1);
  }

  /**
   * The next batch is read while the previous one is with the broker, but sent only after that
   * one's commit: a record sent before it would join its transaction, visible with a checkpoint
   * that does not cover it.
   */
  @Test
  void aBatchReadWhileThePreviousIsInFlightIsSentOnlyAfterItsCommit() throws Exception {
    leases.beat();
    Checkpoint e1 = store.add(0, event("e1"));
    Checkpoint[] e2 = new Checkpoint[1];
    CountDownLatch written = new CountDownLatch(1);
    broker.duringPublish = () -> { // committed while e1 is in flight
      e2[0] = store.add(0, event("e2"));
      written.countDown();
    };
    assertThat(loop.round()).as("e1 in flight").isTrue();
    assertThat(written.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(loop.round()).as("e2 read while e1 was in flight, sent after its commit").isTrue();
    rounds();

    assertThat(broker.commits).containsExactly(
        Map.entry(List.of("e1"), Map.of(0, e1)), Map.entry(List.of("e2"), Map.of(0, e2[0])));
    assertThat(store.checkpoint("s", 0)).isEqualTo(e2[0]);
  }

  @Test
  void aLeaseThatEndsWhileItsRecordsAreInTheTransactionAbortsTheRound() throws Exception {
    leases.beat();
    store.add(0, event("e1"));
    broker.duringPublish = () -> nanos.addAndGet(settings.leaseValidity().toNanos()); // frozen mid-round
    rounds();

    assertThat(broker.visible).as("a round whose bucket's lease ended is not committed").isEmpty();
    assertThat(broker.aborts).isEqualTo(1);
    assertThat(store.checkpoint("s", 0)).isEqualTo(Checkpoint.START);

    leases.beat(); // renewed: the round goes again
    rounds();
    assertThat(broker.visible).containsExactly("e1");
  }

  @Test
  void aBucketGoesOnFromTheBrokersCheckpointWhenTheStoreIsBehind() throws Exception {
    store.add(0, event("e1"));
    Checkpoint e2 = store.add(0, event("e2"));
    store.add(0, event("e3"));
    broker.committed.put(0, e2); // a relay committed e1 and e2 at the broker, then died before its store
    leases.beat();
    rounds();

    assertThat(broker.visible).containsExactly("e3");
  }

  @Test
  void theStoreLearnsTheBrokersCheckpointWhenNothingIsLeftToSend() throws Exception {
    store.add(0, event("e1"));
    Checkpoint e2 = store.add(0, event("e2"));
    broker.committed.put(0, e2); // a relay committed both at the broker, then failed to save its store
    leases.beat();
    rounds();

    assertThat(broker.visible).as("nothing sent again").isEmpty();
    assertThat(store.checkpoint("s", 0)).as("delivered, so no longer counted as waiting").isEqualTo(e2);
  }
}
