package io.txbox.internal;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.RetryPolicy;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.PublishResult;
import io.txbox.spi.StoredMessage;
import io.txbox.spi.support.SettleRule;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.random.RandomGenerator;

/**
 * Turns a bucket's published events and the broker's answers into its new checkpoint. The
 * checkpoint moves over acknowledged and dead-lettered events only, and stops at the first event
 * that will be retried: everything after it is sent again later, never skipped.
 */
final class RoundOutcome {
  final List<BucketProgress> progress = new ArrayList<>();
  final List<DeadLetter> deadLetters = new ArrayList<>();
  final List<Message> acknowledged = new ArrayList<>();
  final List<Retry> retries = new ArrayList<>();

  record Retry(Message message, int attempts, Throwable error) {}

  private final String subscription;
  private final SettleRule rule;
  private final RandomGenerator random;
  private final Map<Integer, Integer> backoffLevels;
  private final Map<Integer, OwnedBuckets.Lease> leases = new HashMap<>();
  private boolean dropped;

  RoundOutcome(
      String subscription, RetryPolicy policy, RandomGenerator random, Map<Integer, Integer> backoffLevels) {
    this.subscription = subscription;
    this.rule = new SettleRule(policy);
    this.random = random;
    this.backoffLevels = backoffLevels;
  }

  /** Settles the bucket of {@code lease}, from its current state. */
  void settle(
      OwnedBuckets.Lease lease,
      List<Sent> sent,
      PublishResult result,
      Instant heldUntil,
      Instant now) {
    leases.put(lease.bucket(), lease);
    settle(lease.state(), sent, result, heldUntil, now);
  }

  /**
   * Drops the progress and dead letters of buckets whose lease fails {@code held}: nothing may be
   * saved for them.
   *
   * @return the buckets dropped
   */
  Set<Integer> retainHeld(Predicate<OwnedBuckets.Lease> held) {
    Set<Integer> dropped = new TreeSet<>();
    leases.forEach((bucket, lease) -> {
      if (!held.test(lease)) {
        dropped.add(bucket);
        lease.rewind();
      }
    });
    progress.removeIf(p -> dropped.contains(p.bucket()));
    deadLetters.removeIf(d -> dropped.contains(d.bucket()));
    return dropped;
  }

  /** The new state of each settled lease whose progress the store saved, i.e. not in {@code lost}. */
  Map<OwnedBuckets.Lease, BucketState> saved(Set<Integer> lost) {
    Map<OwnedBuckets.Lease, BucketState> saved = new LinkedHashMap<>();
    for (BucketProgress p : progress) {
      OwnedBuckets.Lease lease = leases.get(p.bucket());
      if (lease != null && !lost.contains(p.bucket())) {
        saved.put(lease, new BucketState(p.bucket(), p.checkpoint(), p.attempts(), p.nextAttemptAt()));
      }
    }
    return saved;
  }

  /**
   * Settles one bucket by core's {@link SettleRule}, the bucket being the order group: the
   * checkpoint moves over acknowledged and dead-lettered events and stops at the first retried one.
   *
   * @param sent the bucket's events in log order, each with its index in the published batch
   * @param result the broker's answer to the whole batch
   * @param heldUntil when the bucket's next event is due, if a delayed event stopped it
   */
  void settle(
      BucketState state,
      List<Sent> sent,
      PublishResult result,
      Instant heldUntil,
      Instant now) {
    int bucket = state.bucket();
    int level = backoffLevels.getOrDefault(bucket, 0);
    List<SettleRule.Sent> events = new ArrayList<>(sent.size());
    for (int i = 0; i < sent.size(); i++) {
      Sent s = sent.get(i);
      StoredMessage row = s.row();
      // Only the bucket's first event carries its counted attempts: each settled one resets them.
      if (s.deadLettered() != null) {
        events.add(SettleRule.Sent.unreadable(bucket, s.deadLettered()));
      } else if (!row.isReadable()) {
        events.add(SettleRule.Sent.unreadable(bucket, "unreadable row: " + row.unreadable()));
      } else {
        events.add(SettleRule.Sent.sent(bucket, s.index(), i == 0 ? state.attempts() : 0, level));
      }
    }
    List<SettleRule.Outcome> outcomes = rule.settle(events, result, random);
    Checkpoint checkpoint = state.checkpoint();
    int attempts = state.attempts();
    for (int i = 0; i < sent.size(); i++) {
      Sent s = sent.get(i);
      StoredMessage row = s.row();
      SettleRule.Outcome o = outcomes.get(i);
      switch (o.fate()) {
        case ACKNOWLEDGED -> acknowledged.add(row.message());
        case DEAD_LETTERED -> {
          if (s.deadLettered() == null) { // one dead-lettered in an aborted round is saved already
            deadLetters.add(new DeadLetter(subscription, bucket, row.checkpoint(),
                row.isReadable() ? row.message() : null, o.error(), o.attempts()));
          }
        }
        case RETRY -> {
          backoffLevels.merge(bucket, 1, Integer::sum);
          retries.add(new Retry(row.message(), o.attempts(), o.cause()));
          progress.add(new BucketProgress(bucket, checkpoint, o.attempts(), now.plus(o.backoff()), o.error()));
          return; // the rest of the bucket is held back: read again from this checkpoint
        }
        case HELD_BACK -> throw new IllegalStateException("held back before a retry in bucket " + bucket);
      }
      checkpoint = row.checkpoint();
      attempts = 0;
    }
    backoffLevels.remove(bucket);
    progress.add(new BucketProgress(bucket, checkpoint, attempts, heldUntil, null));
  }

  /**
   * Whether the bucket stopped in this batch, at an event to retry or a delayed one: its events
   * read after this batch must not be sent before it is read again from its checkpoint.
   */
  boolean stopped(int bucket) {
    return progress.stream().anyMatch(p -> p.bucket() == bucket && p.nextAttemptAt() != null);
  }

  /**
   * An event of this round, with its index in the published batch: -1 for a row not sent, which is
   * unreadable, or was dead-lettered already ({@code deadLettered} says why) in a round whose
   * transaction was aborted.
   */
  record Sent(StoredMessage row, int index, String deadLettered) {
    Sent(StoredMessage row, int index) {
      this(row, index, null);
    }
  }

  /** Each settled bucket's new checkpoint, for the broker to keep with the round's records. */
  Map<Integer, Checkpoint> checkpoints() {
    Map<Integer, Checkpoint> checkpoints = new LinkedHashMap<>();
    progress.forEach(p -> checkpoints.put(p.bucket(), p.checkpoint()));
    return checkpoints;
  }

  /**
   * Records that {@code lease}'s bucket, whose events were sent this round, was not settled: its
   * lease ended first. Exactly-once delivery then aborts the round, since its records are in it.
   */
  void dropped(OwnedBuckets.Lease lease) {
    dropped = true;
  }

  /** Whether a bucket sent this round was left unsettled, its lease ended. */
  boolean droppedAny() {
    return dropped;
  }

  /** The settled buckets' leases. */
  Collection<OwnedBuckets.Lease> leases() {
    return leases.values();
  }

  /**
   * What a round whose transaction was aborted keeps: its acknowledgements are void, so no
   * checkpoint moves; the retried buckets keep their attempts and wait out their backoff from
   * where they stood. The dead letters stand (they are saved before anything passes them).
   */
  List<BucketProgress> retriesFromWhereTheyStood() {
    List<BucketProgress> kept = new ArrayList<>();
    for (BucketProgress p : progress) {
      OwnedBuckets.Lease lease = leases.get(p.bucket());
      if (p.lastError() != null && lease != null) {
        kept.add(new BucketProgress(p.bucket(), lease.state().checkpoint(), p.attempts(), p.nextAttemptAt(),
            p.lastError()));
      }
    }
    return kept;
  }
}
