package io.txbox.internal;

import io.txbox.spi.Membership;
import io.txbox.spi.Metrics;
import io.txbox.spi.OpenTransaction;
import io.txbox.spi.OutboxStore;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The heartbeat: keeps this instance alive in the subscription, renews its bucket leases, works
 * out its fair share of the buckets and claims free ones up to it. Buckets above the share are
 * given back by the relay loop between rounds. Also warns when a long transaction holds the read
 * horizon back.
 */
final class BucketLeases implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(BucketLeases.class);

  private final RelaySettings settings;
  private final OutboxStore store;
  private final Metrics metrics;
  private final OwnedBuckets buckets;
  private final int bucketCount;
  private final Clock clock;
  private Instant nextStallWarning = Instant.MIN;

  BucketLeases(
      RelaySettings settings, OutboxStore store, Metrics metrics, OwnedBuckets buckets, int bucketCount,
      Clock clock) {
    this.settings = settings;
    this.store = store;
    this.metrics = metrics;
    this.buckets = buckets;
    this.bucketCount = bucketCount;
    this.clock = clock;
  }

  @Override
  public void run() {
    try {
      beat();
      warnIfHorizonHeldBack();
    } catch (RuntimeException e) {
      // A missed heartbeat is survivable; a dead heartbeat thread is not.
      log.warn("subscription {}: heartbeat failed, will try again in {} ms: {}",
          settings.subscription(), settings.heartbeatInterval().toMillis(), e.toString());
    }
  }

  void beat() {
    String subscription = settings.subscription();
    Membership membership = store.heartbeat(subscription, settings.instanceId(), settings.leaseDuration());
    Set<Integer> lost = buckets.retainOnly(membership.ownedBuckets());
    if (!lost.isEmpty()) {
      log.warn("subscription {}: leases on buckets {} expired and were taken over", subscription, lost);
    }
    buckets.setFairShare(fairShare(membership.liveInstances()));
    int missing = buckets.missing();
    if (missing > 0) {
      var claimed = store.claimBuckets(subscription, settings.instanceId(), missing, settings.leaseDuration());
      if (!claimed.isEmpty()) {
        buckets.add(claimed);
        log.info("subscription {}: instance {} took buckets {}", subscription, settings.instanceId(),
            claimed.stream().map(b -> b.bucket()).toList());
      }
    }
    metrics.bucketsOwned(subscription, buckets.size());
  }

  /** Buckets split evenly over the live instances; the first ones in sorted order take the rest. */
  int fairShare(List<String> liveInstances) {
    int members = Math.max(1, liveInstances.size());
    int index = Math.max(0, liveInstances.indexOf(settings.instanceId()));
    return bucketCount / members + (index < bucketCount % members ? 1 : 0);
  }

  private void warnIfHorizonHeldBack() {
    Instant now = clock.instant();
    if (now.isBefore(nextStallWarning)) {
      return;
    }
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
