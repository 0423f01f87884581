package io.txbox.internal;

import io.txbox.spi.BucketState;
import java.time.Instant;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The buckets one relay instance holds a lease on, with their checkpoints. The heartbeat thread
 * adds and drops buckets; the relay loop reads them and records its progress.
 */
final class OwnedBuckets {
  private final ConcurrentHashMap<Integer, BucketState> owned = new ConcurrentHashMap<>();
  private volatile int fairShare = Integer.MAX_VALUE;

  void add(Collection<BucketState> claimed) {
    claimed.forEach(state -> owned.put(state.bucket(), state));
  }

  /** Keeps only {@code stillOwned}; returns the buckets dropped. */
  Set<Integer> retainOnly(Set<Integer> stillOwned) {
    Set<Integer> lost = new TreeSet<>(owned.keySet());
    lost.removeAll(stillOwned);
    lost.forEach(owned::remove);
    return lost;
  }

  void remove(Collection<Integer> buckets) {
    buckets.forEach(owned::remove);
  }

  /** Records progress, unless the bucket was dropped meanwhile. */
  void update(BucketState state) {
    owned.replace(state.bucket(), state);
  }

  /** The bucket's current state, or {@code null} if this instance does not hold it. */
  BucketState get(int bucket) {
    return owned.get(bucket);
  }

  /** The buckets whose next attempt is due, by bucket number. */
  List<BucketState> due(Instant now) {
    return owned.values().stream()
        .filter(s -> s.nextAttemptAt() == null || !s.nextAttemptAt().isAfter(now))
        .sorted(Comparator.comparingInt(BucketState::bucket))
        .toList();
  }

  Set<Integer> ids() {
    return new TreeSet<>(owned.keySet());
  }

  int size() {
    return owned.size();
  }

  void setFairShare(int share) {
    this.fairShare = share;
  }

  int missing() {
    return Math.max(0, fairShare - owned.size());
  }

  /** Buckets held beyond the fair share, highest numbers first, to give back. */
  List<Integer> excess() {
    int extra = owned.size() - fairShare;
    if (extra <= 0) {
      return List.of();
    }
    return owned.keySet().stream().sorted(Comparator.reverseOrder()).limit(extra).toList();
  }
}
