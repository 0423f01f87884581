package io.txbox.cdc.internal;

import io.txbox.spi.Checkpoint;

/**
 * A place in a slot's stream, as exactly-once delivery keeps it at the broker: every event of
 * every transaction that ended before {@code endLsn}, and the first {@code events} of the one that
 * ends there. A transaction ends at the same position each time the slot is read, and its events
 * come in the same order, so a place names the same events after a restart.
 *
 * @param endLsn the end of a transaction's commit record; 0 before anything
 * @param events how many of that transaction's events, counted from its first
 */
public record StreamProgress(long endLsn, long events) {

  /** Before every event. */
  public static final StreamProgress NONE = new StreamProgress(0, 0);

  /** Whether the event at {@code place} comes at or before this place. */
  public boolean covers(StreamProgress place) {
    return place.endLsn < endLsn || (place.endLsn == endLsn && place.events <= events);
  }

  /** As the broker keeps it: the end as the checkpoint's transaction, the count as its position. */
  public Checkpoint checkpoint() {
    return new Checkpoint(endLsn, events);
  }

  /** A place kept as {@link #checkpoint()}; {@link #NONE} for none. */
  public static StreamProgress of(Checkpoint checkpoint) {
    return checkpoint == null ? NONE : new StreamProgress(checkpoint.txId(), checkpoint.position());
  }
}
