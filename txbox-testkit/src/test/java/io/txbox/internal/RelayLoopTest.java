package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.RetryPolicy;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.Metrics;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.testkit.InMemoryOutboxStore;
import io.txbox.testkit.SettableClock;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The relay loop's rules, round by round, on a store in memory and a settable monotonic clock. */
class RelayLoopTest {
  private static final Duration LEASE = Duration.ofSeconds(10);
  private final SettableClock databaseClock = new SettableClock(Instant.parse("2026-01-01T00:00:00Z"));
  private final InMemoryOutboxStore store = new InMemoryOutboxStore(1, databaseClock);
  private final AtomicLong nanos = new AtomicLong(5_000_000_000L);
  private final List<Message> published = new ArrayList<>();
  private final RelaySettings settings = new RelaySettings("s", "a", 100, Duration.ofMillis(1),
      Duration.ofSeconds(2), LEASE, Duration.ZERO, Duration.ofSeconds(1), RetryPolicy.defaults());
  private final OwnedBuckets buckets = new OwnedBuckets(nanos::get, settings.leaseValidity().toNanos());
  private final RelayLoop loop = new RelayLoop(settings, store, new Recording(), Metrics.NONE, buckets,
      new WakeUp(), Clock.systemUTC());
  private final BucketLeases leases =
      new BucketLeases(settings, store, Metrics.NONE, buckets, 1, Clock.systemUTC(), nanos::get, () -> {});

  private final class Recording implements Publisher {
    @Override
    public synchronized PublishResult publish(List<Message> batch) {
      published.addAll(batch);
      return PublishResult.allAcknowledged(batch.size());
    }

    @Override
    public void close() {}
  }

  @AfterEach
  void stopLoop() {
    loop.stop();
    loop.run(); // shuts the publisher thread down
  }

  private static Message event(String name) {
    return Message.builder().type(name).destination("d").key("k").payload(new byte[0]).build();
  }

  private List<String> publishedTypes() {
    synchronized (published) {
      return published.stream().map(Message::type).toList();
    }
  }

  /** Rounds until nothing is in flight: the first round sends, the next one saves. */
  private void settleRounds() throws InterruptedException {
    for (int i = 0; i < 10 && loop.round(); i++) {
      // a full batch or a batch in flight: go on
    }
  }

  @Test
  void aBucketTakenBackStartsAtItsCheckpointNotWhereThisInstanceHadReadBefore() throws Exception {
    leases.beat();
    store.add(0, event("e1"));
    store.add(0, event("e2"));
    settleRounds();
    assertThat(publishedTypes()).containsExactly("e1", "e2");

    buckets.setFairShare(0);
    loop.round(); // gives the bucket back between rounds
    assertThat(store.owner("s", 0)).isNull();

    // Another instance relays e3 and e4 meanwhile, then leaves.
    store.claimBuckets("s", "b", 1, LEASE);
    store.add(0, event("e3"));
    Checkpoint e4 = store.add(0, event("e4"));
    store.saveProgress("s", "b", List.of(new io.txbox.spi.BucketProgress(0, e4, 0, null, null)), List.of());
    store.leave("s", "b");

    buckets.setFairShare(1);
    leases.beat(); // takes the bucket again at its checkpoint, e4
    store.add(0, event("e5"));
    settleRounds();
    assertThat(publishedTypes()).containsExactly("e1", "e2", "e5");
  }

  @Test
  void aRelayPastItsLeaseDeadlineNeitherPublishesNorSavesUntilTheLeaseIsRenewed() throws Exception {
    leases.beat();
    store.add(0, event("e1"));
    nanos.addAndGet(settings.leaseValidity().toNanos()); // frozen, or the heartbeat failing: no renewal
    settleRounds();
    assertThat(publishedTypes()).isEmpty();
    assertThat(store.checkpoint("s", 0)).isEqualTo(Checkpoint.START);

    leases.beat(); // the database lease had not run out yet (its clock did not move): renewed
    settleRounds();
    assertThat(publishedTypes()).containsExactly("e1");
    assertThat(store.checkpoint("s", 0)).isNotEqualTo(Checkpoint.START);
  }

  @Test
  void eventsAcknowledgedAfterTheDeadlineAreNotCheckpointedAndAreReadAgainOnceRenewed() throws Exception {
    leases.beat();
    Checkpoint e1 = store.add(0, event("e1"));
    loop.round(); // e1 handed to the publisher
    await().atMost(Duration.ofSeconds(5)).until(() -> publishedTypes().size() == 1);
    nanos.addAndGet(settings.leaseValidity().toNanos());
    loop.round(); // settles past the deadline: nothing may be saved
    assertThat(store.checkpoint("s", 0)).isEqualTo(Checkpoint.START);

    leases.beat();
    settleRounds();
    assertThat(publishedTypes()).containsExactly("e1", "e1"); // at least once: sent again, never skipped
    assertThat(store.checkpoint("s", 0)).isEqualTo(e1);
  }

  @Test
  void anUnreadableRowIsDeadLetteredInItsPlaceAndItsBucketGoesOn() throws Exception {
    leases.beat();
    store.add(0, event("e1"));
    store.addUnreadable(0, "type must not be null or blank");
    Checkpoint e2 = store.add(0, event("e2"));
    settleRounds();
    assertThat(publishedTypes()).containsExactly("e1", "e2");
    assertThat(store.deadLetters()).singleElement().satisfies(d -> {
      assertThat(d.message()).isNull();
      assertThat(d.error()).contains("type must not be null or blank");
    });
    assertThat(store.checkpoint("s", 0)).isEqualTo(e2);
  }

  @Test
  void aRoundThatFailsLeavesTheLoopRunningAndTroubledUntilARoundSucceeds() throws Exception {
    leases.beat();
    store.add(0, event("e1"));
    store.failReads(new IllegalStateException("the database is restarting"));
    Thread thread = new Thread(loop);
    thread.start();
    try {
      await().atMost(Duration.ofSeconds(10)).until(loop::isTroubled);
      store.failReads(null);
      await().atMost(Duration.ofSeconds(30)).until(() -> publishedTypes().contains("e1"));
      await().atMost(Duration.ofSeconds(10)).until(() -> !loop.isTroubled());
      assertThat(thread.isAlive()).isTrue();
    } finally {
      loop.stop();
      thread.join(10_000);
    }
  }

  @Test
  void anEventThatFailsDropsItsBucketsReadAheadSoNothingBehindItIsSentFirst() throws Exception {
    java.util.concurrent.atomic.AtomicBoolean failOnce = new java.util.concurrent.atomic.AtomicBoolean(true);
    List<String> sentInOrder = java.util.Collections.synchronizedList(new ArrayList<>());
    Publisher refusesE2Once = new Publisher() {
      @Override
      public PublishResult publish(List<Message> batch) {
        java.util.Map<Integer, Exception> failures = new java.util.HashMap<>();
        for (int i = 0; i < batch.size(); i++) {
          if (batch.get(i).type().equals("e2") && failOnce.getAndSet(false)) {
            failures.put(i, new IllegalStateException("broker busy"));
          } else if (!failures.isEmpty()) {
            failures.put(i, new IllegalStateException("after a failure in its bucket"));
          } else {
            sentInOrder.add(batch.get(i).type());
          }
        }
        return PublishResult.of(batch.size(), failures);
      }

      @Override
      public void close() {}
    };
    RelaySettings fastRetries = new RelaySettings("s", "a", 2, Duration.ofMillis(1), Duration.ofSeconds(2), LEASE,
        Duration.ZERO, Duration.ofSeconds(1), RetryPolicy.builder().initialDelay(Duration.ofMillis(1))
            .maxDelay(Duration.ofMillis(5)).build());
    RelayLoop readingAhead = new RelayLoop(fastRetries, store, refusesE2Once, Metrics.NONE, buckets, new WakeUp(),
        Clock.systemUTC());
    leases.beat();
    for (String e : List.of("e1", "e2", "e3", "e4", "e5")) {
      store.add(0, event(e));
    }
    try {
      await().atMost(Duration.ofSeconds(10)).until(() -> {
        readingAhead.round();
        return sentInOrder.size() >= 5;
      });
      assertThat(sentInOrder).as("e3 and later were read ahead before e2 failed; none went first")
          .containsExactly("e1", "e2", "e3", "e4", "e5");
    } finally {
      readingAhead.stop();
      readingAhead.run();
    }
  }
}
