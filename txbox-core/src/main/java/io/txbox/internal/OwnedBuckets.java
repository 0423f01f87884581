package io.txbox.internal;

import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import java.time.Instant;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The buckets one relay instance holds a lease on. The heartbeat thread claims, renews and drops
 * them; the relay loop reads, publishes and checkpoints them.
 *
 * <p>A lease is <em>proven</em>, not assumed: each one carries a deadline on the monotonic clock,
 * the start of the last successful claim or renewal plus the lease's validity (the lease duration
 * less a margin). The database's lease was set at or after that start, so up to the deadline no
 * other instance can have taken the bucket, even when this process was frozen or cut off from the
 * database meanwhile. The loop publishes and checkpoints a bucket only before its deadline.
 */
final class OwnedBuckets {
  private final ConcurrentHashMap<Integer, Lease> owned = new ConcurrentHashMap<>();
  private final LongSupplier nanoTime;
  private final long validityNanos;
  private volatile int fairShare = Integer.MAX_VALUE;
  private volatile List<String> liveMembers = List.of();

  /**
   * @param nanoTime the monotonic clock, {@link System#nanoTime} outside tests
   * @param validityNanos how long after a claim or renewal started the lease counts as held
   */
  OwnedBuckets(LongSupplier nanoTime, long validityNanos) {
    this.nanoTime = nanoTime;
    this.validityNanos = validityNanos;
  }

  /**
   * One claim of one bucket. A bucket claimed again is a new {@code Lease}, so whatever the loop
   * remembered of an earlier claim (in-flight events, its read position) is never used again.
   */
  static final class Lease {
    private final int bucket;
    private volatile BucketState state;
    private volatile long deadlineNanos;
    /** How far the loop has read and handed to the publisher; null: from the checkpoint. Loop thread only. */
    private Checkpoint readCursor;
    /** Exactly-once: whether the broker gave this bucket's checkpoint back since the last doubt. Loop thread only. */
    private boolean takenOver;
    /** Exactly-once: whether the broker fenced the previous owner. Loop thread only. */
    private boolean fenced;

    private Lease(BucketState state, long deadlineNanos) {
      this.bucket = state.bucket();
      this.state = state;
      this.deadlineNanos = deadlineNanos;
    }

    int bucket() {
      return bucket;
    }

    BucketState state() {
      return state;
    }

    /** Where the next read starts: after what is in flight, else after the checkpoint. */
    Checkpoint readFrom() {
      return readCursor != null ? readCursor : state.checkpoint();
    }

    void readUpTo(Checkpoint cursor) {
      this.readCursor = cursor;
    }

    /** Forgets the read position, so the next read starts at the checkpoint again. */
    void rewind() {
      this.readCursor = null;
    }

    boolean takenOver() {
      return takenOver;
    }

    boolean fenced() {
      return fenced;
    }

    /**
     * Exactly-once: the broker fenced the previous owner; reading goes on from {@code brokerCheckpoint}
     * when the broker committed further than the store's checkpoint says.
     */
    void takenOver(Checkpoint brokerCheckpoint) {
      takenOver = true;
      fenced = true;
      resumeFrom(brokerCheckpoint);
    }

    /** Exactly-once: a commit's outcome is unknown; the broker's checkpoint is read again before the next send. */
    void readBackFromBroker() {
      takenOver = false;
    }

    /** Moves the checkpoint forward to {@code committed}, a place the broker holds; never back. */
    void resumeFrom(Checkpoint committed) {
      if (committed != null && committed.compareTo(state.checkpoint()) > 0) {
        state = state.withCheckpoint(committed);
      }
      readCursor = null;
    }

    @Override
    public String toString() {
      return "Lease[bucket=" + bucket + "]";
    }
  }

  /** Adds freshly claimed buckets; {@code claimStartNanos} is when the claim was sent. */
  void add(Collection<BucketState> claimed, long claimStartNanos) {
    long deadline = claimStartNanos + validityNanos;
    claimed.forEach(state -> owned.put(state.bucket(), new Lease(state, deadline)));
  }

  /**
   * Records a successful renewal sent at {@code renewStartNanos}: extends the leases in
   * {@code renewed} and drops the others.
   *
   * @return the buckets dropped
   */
  Set<Integer> renew(Set<Integer> renewed, long renewStartNanos) {
    Set<Integer> lost = new TreeSet<>(owned.keySet());
    lost.removeAll(renewed);
    lost.forEach(owned::remove);
    long deadline = renewStartNanos + validityNanos;
    owned.values().forEach(lease -> {
      if (deadline - lease.deadlineNanos > 0) { // compared by difference: nanoTime may wrap
        lease.deadlineNanos = deadline;
      }
    });
    return lost;
  }

  /** Makes every bucket read from its checkpoint again, as after a failed round. */
  void rewindAll() {
    owned.values().forEach(Lease::rewind);
  }

  void remove(Collection<Integer> buckets) {
    buckets.forEach(owned::remove);
  }

  /**
   * Records progress the store saved, unless the lease was dropped meanwhile. A lease past its
   * deadline is still updated: the database accepted the checkpoint, and a renewed lease must not
   * read from an older one.
   */
  void update(Lease lease, BucketState state) {
    if (owned.get(lease.bucket) == lease) {
      lease.state = state;
    }
  }

  /** Whether {@code lease} is still this instance's current lease on its bucket and within its deadline. */
  boolean holds(Lease lease) {
    return owned.get(lease.bucket) == lease && nanoTime.getAsLong() - lease.deadlineNanos < 0;
  }

  /** The current lease on {@code bucket}, or {@code null}; it may be past its deadline. */
  Lease get(int bucket) {
    return owned.get(bucket);
  }

  /** The held buckets whose next attempt is due, by bucket number; none past its deadline. */
  List<Lease> due(Instant now) {
    return owned.values().stream()
        .filter(this::holds)
        .filter(l -> l.state.nextAttemptAt() == null || !l.state.nextAttemptAt().isAfter(now))
        .sorted(Comparator.comparingInt(Lease::bucket))
        .toList();
  }

  Set<Integer> ids() {
    return new TreeSet<>(owned.keySet());
  }

  int size() {
    return owned.size();
  }

  /** The subscription's live members, as the last heartbeat saw them. */
  List<String> liveMembers() {
    return liveMembers;
  }

  void setLiveMembers(List<String> members) {
    this.liveMembers = List.copyOf(members);
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
