package io.txbox.cdc.internal;

import io.txbox.spi.Checkpoint;
import io.txbox.spi.FencedException;
import io.txbox.spi.Metrics;
import io.txbox.spi.TransactionalPublisher;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The logical relay's part in exactly-once delivery: each batch is one broker transaction that
 * holds, beside its records, the slot's place in the stream ({@link StreamProgress}) under bucket
 * {@value #BUCKET}. One transactional id per slot, {@code <prefix><slot>.}{@value #MEMBER}: a
 * relay that starts streaming the slot registers it again, and the broker fences the previous
 * streamer, however long it was frozen. The broker's place is the truth; the slot's confirmed
 * position follows it after each commit. Beside the place, a note says which transactions were
 * delivered past the slot's last checkpoint in the database ({@link DeliveredPastMark}), for the
 * catch-up from the table after a failover that lost the slot.
 */
final class SlotTransactions {
  private static final Logger log = LoggerFactory.getLogger(SlotTransactions.class);
  /** The one member of a slot's exactly-once subscription: one relay streams a slot at a time. */
  static final String MEMBER = "logical";
  /** The bucket the slot's place is kept under. */
  static final int BUCKET = 0;

  private final String slot;
  private final TransactionalPublisher publisher;
  private final Supplier<String> outboxId;
  private final Metrics metrics;
  private final DeliveredPastMark delivered = new DeliveredPastMark();
  /** How far the last catch-up got, as the last take-over read it; {@code null} for none. */
  private CatchUpProgress catchUp;
  private boolean started;

  SlotTransactions(String slot, TransactionalPublisher publisher, Supplier<String> outboxId, Metrics metrics) {
    this.slot = slot;
    this.publisher = publisher;
    this.outboxId = outboxId;
    this.metrics = metrics;
  }

  /**
   * Called when this relay begins streaming the slot, or catching it up: fences whoever streamed it
   * before and reads back the place the broker holds, up to which every event is delivered, and
   * the note of what was delivered past the checkpoint.
   *
   * @param reference a full transaction id of now: the stream names transactions by 32 bits
   */
  synchronized StreamProgress takeOver(long reference) {
    if (!started) {
      publisher.start(slot, MEMBER, 2, outboxId.get()); // registers the id: fences the previous streamer
      started = true;
    }
    Map<Integer, Checkpoint> held = publisher.takeOver(Map.of(BUCKET, MEMBER, CatchUpProgress.BUCKET, MEMBER),
        List.of(MEMBER));
    StreamProgress place = StreamProgress.of(held.get(BUCKET));
    delivered.restore(publisher.notes().get(BUCKET), reference);
    catchUp = CatchUpProgress.parse(held.get(CatchUpProgress.BUCKET),
        publisher.notes().get(CatchUpProgress.BUCKET));
    log.info("slot {}: the broker holds every event up to {} (event {} of the transaction ending there)", slot,
        Lsn.format(place.endLsn()), place.events());
    return place;
  }

  /** What the note read by the last {@link #takeOver} says was delivered past the checkpoint. */
  synchronized DeliveredPastMark.Note deliveredPastCheckpoint() {
    return delivered.asNote();
  }

  /** How far a catch-up from {@code from} got before, as the broker keeps it; empty for none. */
  synchronized Optional<CatchUpProgress> catchUpFrom(SlotCheckpoints.Mark from) {
    return Optional.ofNullable(catchUp).filter(c -> c.startedFrom(from));
  }

  /** The checkpoint {@code mark} was just written: the note forgets what it covers. */
  synchronized void covered(SlotCheckpoints.Candidate mark) {
    delivered.covered(mark);
  }

  private synchronized String noteWith(List<PendingEvents.Entry> batch) {
    delivered.delivered(batch, Instant.now());
    return delivered.note();
  }

  /**
   * Commits the transaction of {@code batch} with the slot's new place and the note, or, for a
   * batch of the catch-up from the table, with how far the catch-up got ({@code catchUp}; {@code
   * null} keeps none). Throws when the commit failed or was fenced: it may or may not have
   * happened, and the session ends, so that the next one reads them back.
   */
  void commit(StreamProgress progress, CatchUpProgress catchUp, List<PendingEvents.Entry> batch) {
    try {
      if (progress != null) {
        publisher.commit(Map.of(BUCKET, progress.checkpoint()), Map.of(BUCKET, noteWith(batch)));
      } else if (catchUp != null) {
        publisher.commit(Map.of(CatchUpProgress.BUCKET, catchUp.checkpoint()),
            Map.of(CatchUpProgress.BUCKET, catchUp.note()));
      } else {
        publisher.commit(Map.of());
      }
    } catch (FencedException e) {
      metrics.transaction(slot, Metrics.TransactionOutcome.FENCED);
      throw new IllegalStateException("the broker fenced this relay's transaction: another relay streams slot "
          + slot + " now, and nothing of the batch is visible", e);
    } catch (RuntimeException e) {
      metrics.transaction(slot, Metrics.TransactionOutcome.UNKNOWN);
      throw new IllegalStateException("committing a batch of slot " + slot + " failed, and may or may not have"
          + " committed; the place is read back from the broker before anything is sent again: " + e, e);
    }
    metrics.transaction(slot, Metrics.TransactionOutcome.COMMITTED);
  }

  /** Drops the batch's transaction: nothing sent in it becomes visible. */
  void abort(String why) {
    publisher.abort();
    metrics.transaction(slot, Metrics.TransactionOutcome.ABORTED);
    log.info("slot {}: aborted the batch's transaction ({}); its events are sent again", slot, why);
  }

  /** Ends an open transaction, when a session ends with one. */
  void abandon() {
    publisher.abort();
  }
}
