package io.txbox.internal;

import io.txbox.DeadLetter;
import io.txbox.internal.OwnedBuckets.Lease;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.FencedException;
import io.txbox.spi.Metrics;
import io.txbox.spi.RelayStore;
import io.txbox.spi.StoredMessage;
import io.txbox.spi.TransactionalPublisher;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay loop's part in {@link io.txbox.Delivery#EXACTLY_ONCE}. Each round is one broker
 * transaction: its records, and each bucket's new checkpoint beside them, become visible together
 * or not at all. The broker's checkpoint is the truth; the store's follows it after each commit.
 *
 * <ul>
 *   <li>A bucket claimed is published only after the broker fenced its previous owner (a zombie's
 *       open transaction is aborted, its later sends refused) and gave back its checkpoint, which
 *       the loop reads on from when it is later than the store's.
 *   <li>A round commits only when every event of it was acknowledged or dead-lettered and every
 *       bucket of it is still held; dead letters are saved in the store first, so the broker's
 *       checkpoint never passes an event that is neither delivered nor kept.
 *   <li>Otherwise the transaction is aborted: no checkpoint moves, retried buckets wait out their
 *       backoff from where they stood, and the events dead-lettered in it are remembered, so the
 *       next round passes them without sending them.
 *   <li>A commit that throws may or may not have committed: the buckets' checkpoints are read back
 *       from the broker before they are published again.
 * </ul>
 */
final class ExactlyOnce {
  private static final Logger log = LoggerFactory.getLogger(ExactlyOnce.class);

  private final RelaySettings settings;
  private final TransactionalPublisher publisher;
  private final RelayStore store;
  private final OwnedBuckets buckets;
  private final Metrics metrics;
  /** Events dead-lettered in aborted rounds, by bucket and place, with why: passed, not sent, next time. */
  private final Map<Integer, Map<Checkpoint, String>> deadLettered = new HashMap<>();

  ExactlyOnce(RelaySettings settings, TransactionalPublisher publisher, RelayStore store, OwnedBuckets buckets,
      Metrics metrics) {
    this.settings = settings;
    this.metrics = metrics;
    this.publisher = publisher;
    this.store = store;
    this.buckets = buckets;
  }

  /**
   * Before the leases in {@code due} are published: for each one not taken over at the broker yet,
   * fences its previous owner (once per claim) and reads its checkpoint back.
   */
  void takeOver(List<Lease> due) {
    Map<Integer, String> previousOwners = new TreeMap<>();
    Map<Integer, Lease> fresh = new HashMap<>();
    for (Lease lease : due) {
      if (!lease.takenOver()) {
        previousOwners.put(lease.bucket(), lease.fenced() ? null : lease.state().previousOwner());
        fresh.put(lease.bucket(), lease);
      }
    }
    if (fresh.isEmpty()) {
      return;
    }
    Map<Integer, Checkpoint> held = publisher.takeOver(previousOwners, buckets.liveMembers());
    List<BucketProgress> ahead = new ArrayList<>();
    fresh.forEach((bucket, lease) -> {
      Checkpoint broker = held.get(bucket);
      if (broker != null && broker.compareTo(lease.state().checkpoint()) > 0) {
        log.info("subscription {}: bucket {} goes on from {}, which the broker committed beyond the store's {}",
            settings.subscription(), bucket, broker, lease.state().checkpoint());
        ahead.add(new BucketProgress(bucket, broker, 0, null, null));
      }
    });
    saveBrokersCheckpoints(ahead);
    fresh.forEach((bucket, lease) -> lease.takenOver(held.get(bucket)));
  }

  /**
   * The store learns where the broker's checkpoints stand: otherwise, with no event left to send,
   * its own would stay behind what was delivered, and status, the backlog gauges and the janitor
   * would count delivered events as waiting until the next event came. A save that throws is
   * tried again with the whole take-over, before anything is sent.
   */
  private void saveBrokersCheckpoints(List<BucketProgress> ahead) {
    if (ahead.isEmpty()) {
      return;
    }
    Set<Integer> lost = store.saveProgress(settings.subscription(), settings.member(), ahead, List.of());
    if (!lost.isEmpty()) {
      log.warn("subscription {}: lost the lease on buckets {} while taking them over; their new owner goes on",
          settings.subscription(), lost);
      buckets.remove(lost);
    }
  }

  /** Why {@code row} was dead-lettered in an aborted round, or {@code null}: such a row is passed, not sent. */
  String deadLettered(StoredMessage row) {
    Map<Checkpoint, String> of = deadLettered.get(row.bucket());
    return of == null ? null : of.get(row.checkpoint());
  }

  /**
   * Commits the round's transaction, or aborts it.
   *
   * @return the buckets whose leases the store says are lost, when the round committed; {@code
   *     null} when it was aborted (what it keeps is saved here, and the buckets read again)
   */
  Set<Integer> commitOrAbort(RoundOutcome outcome) {
    boolean allHeld = !outcome.droppedAny() && outcome.leases().stream().allMatch(buckets::holds);
    if (!outcome.retries.isEmpty() || !allHeld) {
      abort(outcome, allHeld ? "an event failed and is retried" : "a bucket's lease passed its deadline");
      return null;
    }
    Set<Integer> lost = outcome.deadLetters.isEmpty() ? Set.of()
        : store.saveProgress(settings.subscription(), settings.member(), List.of(), outcome.deadLetters);
    if (!lost.isEmpty()) {
      abort(outcome, "the store says the leases on buckets " + lost + " are lost");
      return null;
    }
    try {
      publisher.commit(outcome.checkpoints());
    } catch (FencedException e) {
      log.warn("subscription {}: the broker fenced this relay's round: another relay took its buckets over, and"
          + " nothing of the round is visible; their checkpoints are read back: {}", settings.subscription(),
          e.getMessage());
      metrics.transaction(settings.subscription(), Metrics.TransactionOutcome.FENCED);
      recordFence();
      abortUnknown(outcome);
      return null;
    } catch (RuntimeException e) {
      log.warn("subscription {}: committing a round failed, and may or may not have committed; its buckets'"
          + " checkpoints are read back from the broker: {}", settings.subscription(), e.toString());
      metrics.transaction(settings.subscription(), Metrics.TransactionOutcome.UNKNOWN);
      abortUnknown(outcome);
      return null;
    }
    metrics.transaction(settings.subscription(), Metrics.TransactionOutcome.COMMITTED);
    forgetPassed(outcome.checkpoints());
    return lost;
  }

  /**
   * Keeps the fence on this relay's row, where {@code txbox status} finds a relay that keeps losing
   * its buckets. Only a diagnosis: a store that cannot keep it (an outage, tables not migrated yet)
   * stops nothing.
   */
  private void recordFence() {
    try {
      store.recordFence(settings.subscription(), settings.member());
    } catch (RuntimeException e) {
      log.warn("subscription {}: could not record the fence in the store, so txbox status will not count it: {}",
          settings.subscription(), e.toString());
    }
  }

  /** Drops the transaction in hand, keeping the dead letters and retries of {@code outcome}. */
  private void abort(RoundOutcome outcome, String why) {
    publisher.abort();
    metrics.transaction(settings.subscription(), Metrics.TransactionOutcome.ABORTED);
    log.info("subscription {}: aborted the round's transaction ({}); its events are sent again",
        settings.subscription(), why);
    store.saveProgress(settings.subscription(), settings.member(), outcome.retriesFromWhereTheyStood(),
        outcome.deadLetters);
    remember(outcome.deadLetters);
    outcome.retriesFromWhereTheyStood().forEach(p -> {
      Lease lease = buckets.get(p.bucket());
      if (lease != null) {
        buckets.update(lease, new BucketState(p.bucket(), p.checkpoint(), p.attempts(), p.nextAttemptAt()));
      }
    });
    buckets.rewindAll();
  }

  /**
   * After a commit of unknown outcome: the broker's checkpoints decide where each bucket goes on,
   * so they are read back (by {@link #takeOver}) before the buckets are published again.
   */
  private void abortUnknown(RoundOutcome outcome) {
    publisher.abort();
    remember(outcome.deadLetters); // saved before the commit
    outcome.leases().forEach(Lease::readBackFromBroker);
    buckets.rewindAll();
  }

  /**
   * After a round that failed anywhere (a store that could not save, a broker that did not
   * answer): its transaction, if still open, is aborted, and every bucket's checkpoint is read back
   * from the broker before the next send, since the failure may have come after a commit.
   */
  void afterFailedRound() {
    publisher.abort();
    for (int bucket : buckets.ids()) {
      Lease lease = buckets.get(bucket);
      if (lease != null) {
        lease.readBackFromBroker();
      }
    }
  }

  private void remember(List<DeadLetter> letters) {
    letters.forEach(d -> deadLettered.computeIfAbsent(d.bucket(), b -> new HashMap<>()).put(d.position(), d.error()));
  }

  /** Forgets the remembered dead letters that the committed checkpoints have passed. */
  private void forgetPassed(Map<Integer, Checkpoint> committed) {
    committed.forEach((bucket, checkpoint) -> {
      Map<Checkpoint, String> of = deadLettered.get(bucket);
      if (of != null) {
        of.keySet().removeIf(c -> c.compareTo(checkpoint) <= 0);
        if (of.isEmpty()) {
          deadLettered.remove(bucket);
        }
      }
    });
  }
}
