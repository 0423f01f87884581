package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.RetryPolicy;
import io.txbox.spi.Metrics;
import io.txbox.spi.OutboxStore;
import io.txbox.testkit.InMemoryOutboxStore;
import io.txbox.testkit.SettableClock;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** How relay instances come to their fair shares of the buckets, beat by beat, on a store in memory. */
class FairShareTest {
  private static final int BUCKETS = 64;
  private static final Duration HEARTBEAT = Duration.ofSeconds(2);
  private final InMemoryOutboxStore store = new InMemoryOutboxStore(BUCKETS);

  /** One relay instance's heartbeat and the buckets it holds. */
  private final class Instance {
    final OwnedBuckets buckets = new OwnedBuckets(System::nanoTime, Duration.ofSeconds(8).toNanos());
    final AtomicInteger wakeUps = new AtomicInteger();
    final BucketLeases leases;
    final String id;

    Instance(String id) {
      this.id = id;
      RelaySettings settings = new RelaySettings("s", id, 100, Duration.ofMillis(1), HEARTBEAT,
          Duration.ofSeconds(10), Duration.ZERO, Duration.ofSeconds(1), RetryPolicy.defaults());
      leases = new BucketLeases(settings, store, Metrics.NONE, buckets, BUCKETS, Clock.systemUTC(), System::nanoTime,
          wakeUps::incrementAndGet);
    }

    /** What the relay loop does between rounds with buckets above the share. */
    void giveBackExcess() {
      store.releaseBuckets("s", id, buckets.excess());
      buckets.remove(buckets.excess());
    }
  }

  @Test
  void instancesStartingTogetherSplitTheBucketsWithoutOneTakingThemAll() {
    store.openSubscription("s");
    Instance a = new Instance("a");
    Instance b = new Instance("b");

    a.leases.register();
    b.leases.register();
    assertThat(a.buckets.size()).as("the first beat claims nothing").isZero();
    a.leases.beat();
    b.leases.beat();

    assertThat(a.buckets.size()).isEqualTo(BUCKETS / 2);
    assertThat(b.buckets.size()).isEqualTo(BUCKETS / 2);
    assertThat(a.buckets.excess()).isEmpty();
  }

  @Test
  void anInstanceBelowItsShareBeatsTenTimesAsOftenUntilItHoldsIt() {
    store.openSubscription("s");
    Instance a = new Instance("a");
    a.leases.register();
    assertThat(a.leases.nextBeat()).as("just started, nothing held").isEqualTo(HEARTBEAT.dividedBy(10));
    a.leases.beat();
    assertThat(a.leases.nextBeat()).as("all 64 held").isEqualTo(HEARTBEAT);

    Instance b = new Instance("b");
    b.leases.register();
    b.leases.beat();
    assertThat(b.buckets.size()).as("a holds them all still").isZero();
    assertThat(b.leases.nextBeat()).isEqualTo(HEARTBEAT.dividedBy(10));

    a.leases.beat(); // a sees b, and its loop gives half back
    a.giveBackExcess();
    b.leases.beat();

    assertThat(b.buckets.size()).isEqualTo(BUCKETS / 2);
    assertThat(b.leases.nextBeat()).isEqualTo(HEARTBEAT);
    assertThat(b.wakeUps).as("the claim woke b's loop").hasValue(1);
  }

  @Test
  void theOpenTransactionQueryRunsOncePerIntervalHoweverFastTheBeatsCome() {
    store.openSubscription("s");
    AtomicInteger asked = new AtomicInteger();
    OutboxStore counting = (OutboxStore) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {OutboxStore.class}, (proxy, method, args) -> {
          if (method.getName().equals("oldestOpenTransaction")) {
            asked.incrementAndGet();
          }
          try {
            return method.invoke(store, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
    SettableClock clock = new SettableClock(Instant.parse("2026-01-01T00:00:00Z"));
    RelaySettings settings = new RelaySettings("s", "a", 100, Duration.ofMillis(1), HEARTBEAT,
        Duration.ofSeconds(10), Duration.ZERO, Duration.ofSeconds(1), RetryPolicy.defaults());
    BucketLeases leases = new BucketLeases(settings, counting, Metrics.NONE,
        new OwnedBuckets(System::nanoTime, Duration.ofSeconds(8).toNanos()), BUCKETS, clock, System::nanoTime, () -> { });

    for (int beat = 0; beat < 10; beat++) {
      leases.run();
      clock.advance(HEARTBEAT.dividedBy(10).minusMillis(1));
    }
    assertThat(asked).as("ten fast beats within one interval").hasValue(1);
    clock.advance(Duration.ofMillis(10));
    leases.run();
    assertThat(asked).hasValue(2);
  }
}
