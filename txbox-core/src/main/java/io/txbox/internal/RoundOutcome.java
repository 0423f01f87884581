package io.txbox.internal;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.RetryPolicy;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.PublishResult;
import io.txbox.spi.support.RetryBudget;
import io.txbox.spi.StoredMessage;
import java.time.Instant;
import java.util.ArrayList;
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
  private final RetryPolicy policy;
  private final RetryBudget budget;
  private final RandomGenerator random;
  private final Map<Integer, Integer> backoffLevels;
  private final Map<Integer, OwnedBuckets.Lease> leases = new HashMap<>();

  RoundOutcome(
      String subscription, RetryPolicy policy, RandomGenerator random, Map<Integer, Integer> backoffLevels) {
    this.subscription = subscription;
    this.policy = policy;
    this.budget = new RetryBudget(policy);
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
   * Settles one bucket.
   *
   * @param sent the bucket's events in log order, each with its index in the published batch
   * @param result the broker's answer to the whole batch: failures count as attempts by the rule
   *     of {@link RetryBudget}, which the logical relay follows too
   * @param heldUntil when the bucket's next event is due, if a delayed event stopped it
   */
  void settle(
      BucketState state,
      List<Sent> sent,
      PublishResult result,
      Instant heldUntil,
      Instant now) {
    Checkpoint checkpoint = state.checkpoint();
    int attempts = state.attempts();
    for (Sent s : sent) {
      if (!s.row().isReadable()) { // never sent: it can only ever fail, so it must not hold the key up
        deadLetters.add(new DeadLetter(subscription, state.bucket(), s.row().checkpoint(), null,
            "unreadable row: " + s.row().unreadable(), 1));
        checkpoint = s.row().checkpoint();
        attempts = 0;
        continue;
      }
      Exception error = result.failure(s.index());
      if (error == null) {
        checkpoint = s.row().checkpoint();
        attempts = 0;
        acknowledged.add(s.row().message());
        continue;
      }
      RetryBudget.Verdict verdict = budget.afterFailure(error, attempts, result);
      if (verdict.deadLetter()) {
        deadLetters.add(new DeadLetter(subscription, state.bucket(), s.row().checkpoint(), s.row().message(),
            verdict.error(), verdict.attempts()));
        checkpoint = s.row().checkpoint();
        attempts = 0;
        continue;
      }
      int level = backoffLevels.merge(state.bucket(), 1, Integer::sum);
      retries.add(new Retry(s.row().message(), verdict.attempts(), error));
      progress.add(new BucketProgress(state.bucket(), checkpoint, verdict.attempts(),
          now.plus(policy.delayAfter(level, random)), verdict.error()));
      return;
    }
    backoffLevels.remove(state.bucket());
    progress.add(new BucketProgress(state.bucket(), checkpoint, attempts, heldUntil, null));
  }

  /**
   * Whether the bucket stopped in this batch, at an event to retry or a delayed one: its events
   * read after this batch must not be sent before it is read again from its checkpoint.
   */
  boolean stopped(int bucket) {
    return progress.stream().anyMatch(p -> p.bucket() == bucket && p.nextAttemptAt() != null);
  }

  /** An event sent this round, with its index in the published batch; -1 for an unreadable row, not sent. */
  record Sent(StoredMessage row, int index) {}
}
