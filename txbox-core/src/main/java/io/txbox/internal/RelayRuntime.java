package io.txbox.internal;

import io.txbox.Delivery;
import io.txbox.TxboxException;
import io.txbox.spi.Metrics;
import io.txbox.spi.Publisher;
import io.txbox.spi.RelayStore;
import io.txbox.spi.TransactionalPublisher;
import io.txbox.spi.support.LoopGuard;
import java.time.Clock;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The threads of one running relay: the work loop, the heartbeat and the wake-up listener. */
public final class RelayRuntime {
  private static final Logger log = LoggerFactory.getLogger(RelayRuntime.class);

  private final RelaySettings settings;
  private final RelayStore store;
  private final Publisher publisher;
  private final OwnedBuckets buckets;
  private final WakeUp wakeUp = new WakeUp();
  private final RelayLoop loop;
  private final BucketLeases leases;
  private final ScheduledThreadPoolExecutor heartbeat;
  private final Thread loopThread;
  private final AutoCloseable listener;
  private final Metrics metrics;

  private final LoopGuard heartbeatGuard;

  private RelayRuntime(RelaySettings settings, RelayStore store, Publisher publisher, Metrics metrics) {
    this.settings = settings;
    this.store = store;
    this.publisher = publisher;
    int bucketCount = store.openSubscription(settings.subscription());
    if (settings.delivery() == Delivery.EXACTLY_ONCE) {
      // Before any thread starts: a broker that refuses transactions fails the start, not a round.
      ((TransactionalPublisher) publisher).start(settings.subscription(), settings.member(), bucketCount,
          store.outboxId().orElse(null));
    }
    Clock clock = Clock.systemUTC();
    this.buckets = new OwnedBuckets(System::nanoTime, settings.leaseValidity().toNanos());
    this.metrics = metrics;
    this.loop = new RelayLoop(settings, store, publisher, metrics, buckets, wakeUp, clock);
    // a claim wakes the loop: a bucket just taken over may have events waiting
    this.leases = new BucketLeases(settings, store, metrics, buckets, bucketCount, clock, System::nanoTime,
        wakeUp::signal);
    leases.register(); // fail fast on a store that cannot hold leases, before any thread starts
    this.heartbeat = new ScheduledThreadPoolExecutor(1, r -> daemon(r, "txbox-heartbeat-" + settings.subscription()));
    heartbeat.setExecuteExistingDelayedTasksAfterShutdownPolicy(false); // stop() ends the beats
    this.heartbeatGuard = new LoopGuard("txbox heartbeat of subscription " + settings.subscription());
    scheduleBeat(leases.nextBeat());
    this.listener = store.listen(wakeUp::signal);
    this.loopThread = new Thread(loop, "txbox-relay-" + settings.subscription());
    loopThread.start();
  }

  /** Beats after {@code delay}, then schedules the next beat, short while below the fair share. */
  private void scheduleBeat(Duration delay) {
    try {
      heartbeat.schedule(() -> {
        heartbeatGuard.attempt(leases::run);
        scheduleBeat(leases.nextBeat());
      }, delay.toMillis(), TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // stopping: no more beats
    }
  }

  /** Starts the threads; fails with a {@link TxboxException} when the store is not usable. */
  public static RelayRuntime start(
      RelaySettings settings, RelayStore store, Publisher publisher, Metrics metrics) {
    return new RelayRuntime(settings, store, publisher, metrics);
  }

  /** Whether the last round or the last heartbeat failed. */
  public boolean isTroubled() {
    return loop.isTroubled() || heartbeatGuard.isTroubled();
  }

  /** The buckets this instance holds now. */
  public Set<Integer> ownedBuckets() {
    return buckets.ids();
  }

  /** Whether the work loop is still running. */
  public boolean isAlive() {
    return loopThread.isAlive();
  }

  /**
   * Lets the current round finish (publish, acks, checkpoint), then gives the buckets back so that
   * other instances take over at once. The heartbeat stops last: it keeps the leases proven while
   * the round drains, and claims nothing new meanwhile. A round still running after the drain
   * timeout keeps its leases, which then expire; past its buckets' deadlines it can neither send
   * nor save, and giving the buckets back early would let two instances send at once.
   */
  public void stop() {
    leases.stopClaiming();
    loop.stop();
    closeQuietly(listener);
    boolean drained = join();
    heartbeat.shutdown();
    awaitHeartbeat();
    if (drained) {
      try {
        store.leave(settings.subscription(), settings.member());
      } catch (RuntimeException e) {
        log.warn("subscription {}: could not give the buckets back; they are taken over when their"
            + " leases expire: {}", settings.subscription(), e.toString());
      }
    } else {
      log.warn("subscription {}: the current round did not finish within {}; its leases expire"
          + " instead of being given back", settings.subscription(), settings.drainTimeout());
    }
    // Given back or left to expire, none is this instance's any more: a gauge still showing them
    // would hide a subscription that no relay serves.
    metrics.bucketsOwned(settings.subscription(), 0);
    publisher.close();
  }

  /** A beat in progress may renew; it must be over before the buckets are given back. */
  private void awaitHeartbeat() {
    try {
      if (!heartbeat.awaitTermination(settings.leaseDuration().toMillis(), TimeUnit.MILLISECONDS)) {
        heartbeat.shutdownNow();
      }
    } catch (InterruptedException e) {
      heartbeat.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  private boolean join() {
    try {
      loopThread.join(settings.drainTimeout().toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !loopThread.isAlive();
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  private static void closeQuietly(AutoCloseable closeable) {
    try {
      closeable.close();
    } catch (Exception e) {
      log.debug("closing the wake-up listener failed", e);
    }
  }
}
