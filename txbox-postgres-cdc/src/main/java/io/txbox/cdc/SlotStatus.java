package io.txbox.cdc;

/**
 * A replication slot's state as the server reports it ({@code pg_replication_slots}).
 *
 * <pre>{@code
 * replication.status().ifPresent(s -> log.info("slot {} is {} bytes behind", s.slot(), s.lagBytes()));
 * }</pre>
 *
 * @param slot the slot's name
 * @param active whether a relay streams it now
 * @param activePid the server process that streams it, or {@code null}
 * @param walStatus {@code reserved}, {@code extended}, {@code unreserved} or {@code lost}
 * @param confirmedLsn the position the relays confirmed: everything before it was delivered
 * @param lagBytes WAL written since the confirmed position
 * @param retainedBytes WAL the server keeps for the slot
 */
public record SlotStatus(
    String slot, boolean active, Integer activePid, String walStatus, String confirmedLsn, long lagBytes,
    long retainedBytes) {

  /** Whether the server removed WAL the slot still needed: it can never be streamed again. */
  public boolean invalidated() {
    return "lost".equals(walStatus);
  }
}
