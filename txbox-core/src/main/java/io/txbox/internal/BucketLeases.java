package io.txbox.internal;

import io.txbox.spi.Membership;
import io.txbox.spi.Metrics;
import io.txbox.spi.OpenTransaction;
import io.txbox.spi.RelayStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The heartbeat: keeps this instance alive in the subscription, renews its bucket leases, works
 * out its fair share of the buckets and claims free ones up to it. Buckets above the share are
 * given back by the relay loop between rounds. Also warns when a long transaction holds the read
 * horizon back.
 *
 * <p>An instance below its fair share beats ten times as often (every tenth of the heartbeat
 * interval, at least 10 ms) until it holds it, so that it takes buckets another instance gives
 * back, or whose lease runs out, within a fraction of the interval instead of a whole one. Its
 * first beat only registers it: claims wait for the next, short, beat, so that instances starting
 * together see each other and claim their shares instead of one claiming everything and handing
 * most of it back.
 */
final class BucketLeases implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(BucketLeases.class);
  private static final Duration MIN_FAST_BEAT = Duration.ofMillis(10);

  private final RelaySettings settings;
  private final RelayStore store;
  private final Metrics metrics;
  private final OwnedBuckets buckets;
  private final int bucketCount;
  private final Clock clock;
  private final LongSupplier nanoTime;
  private final Runnable onClaimed;
  private volatile boolean claiming = true;
  private Instant nextStallWarning = Instant.MIN;
  private Instant nextHorizonCheck = Instant.MIN;

  BucketLeases(
      RelaySettings settings, RelayStore store, Metrics metrics, OwnedBuckets buckets, int bucketCount,
      Clock clock, LongSupplier nanoTime, Runnable onClaimed) {
    this.settings = settings;
    this.store = store;
    this.metrics = metrics;
    this.buckets = buckets;
    this.bucketCount = bucketCount;
    this.clock = clock;
    this.nanoTime = nanoTime;
    this.onClaimed = onClaimed;
  }

  @Override
  public void run() {
    beat();
    warnIfHorizonHeldBack();
  }

  /** From now on only renews what is held: a relay shutting down must not take new buckets. */
  void stopClaiming() {
    claiming = false;
  }

  /** The first beat: alive, and its fair share known, but nothing claimed yet. */
  void register() {
    beat(false);
  }

  void beat() {
    beat(claiming);
  }

  /** How long until the next beat: short while this instance is below its fair share. */
  Duration nextBeat() {
    Duration interval = settings.heartbeatInterval();
    if (!claiming || buckets.missing() == 0) {
      return interval;
    }
    Duration fast = interval.dividedBy(10);
    if (fast.compareTo(MIN_FAST_BEAT) < 0) {
      fast = MIN_FAST_BEAT.compareTo(interval) < 0 ? MIN_FAST_BEAT : interval;
    }
    return fast;
  }

  private void beat(boolean claim) {
    String subscription = settings.subscription();
    // Taken before the statement is sent: the database sets the lease from a later "now", so the
    // local deadline counted from here never outlasts the lease that other instances see.
    long sentAt = nanoTime.getAsLong();
    Membership membership = store.heartbeat(subscription, settings.member(), settings.leaseDuration());
    Set<Integer> lost = buckets.renew(membership.ownedBuckets(), sentAt);
    if (!lost.isEmpty()) {
      log.warn("subscription {}: leases on buckets {} expired and were taken over", subscription, lost);
    }
    buckets.setFairShare(fairShare(membership.liveInstances()));
    buckets.setLiveMembers(membership.liveInstances());
    int missing = buckets.missing();
    if (claim && missing > 0) {
      long claimSentAt = nanoTime.getAsLong();
      var claimed = store.claimBuckets(subscription, settings.member(), missing, settings.leaseDuration());
      if (!claimed.isEmpty()) {
        buckets.add(claimed, claimSentAt);
        onClaimed.run();
        log.info("subscription {}: relay {} took buckets {}", subscription, settings.member(),
            claimed.stream().map(b -> b.bucket()).toList());
      }
    }
    metrics.bucketsOwned(subscription, buckets.size());
  }

  /** Buckets split evenly over the live instances; the first ones in sorted order take the rest. */
  int fairShare(List<String> liveInstances) {
    int members = Math.max(1, liveInstances.size());
    int index = Math.max(0, liveInstances.indexOf(settings.member()));
    return bucketCount / members + (index < bucketCount % members ? 1 : 0);
  }

  private void warnIfHorizonHeldBack() {
    Instant now = clock.instant();
    // Once per heartbeat interval, however fast the beats come while claiming: it reads
    // pg_stat_activity, which costs more than a beat.
    if (now.isBefore(nextStallWarning) || now.isBefore(nextHorizonCheck)) {
      return;
    }
    nextHorizonCheck = now.plus(settings.heartbeatInterval());
    store.oldestOpenTransaction()
        .filter(tx -> tx.age().compareTo(settings.stallWarning()) > 0)
        .ifPresent(tx -> {
          warn(tx);
          nextStallWarning = now.plus(settings.stallWarning());
        });
  }

  private void warn(OpenTransaction tx) {
    log.warn("subscription {}: delivery is held back by a transaction open for {} s (pid {}: {});"
            + " events committed after it began are relayed once it ends",
        settings.subscription(), tx.age().toSeconds(), tx.pid(), tx.description());
  }
}
