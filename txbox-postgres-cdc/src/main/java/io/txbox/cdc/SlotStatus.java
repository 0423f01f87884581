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
 * @param confirmedLsn the position the relays confirmed: everything before it was delivered;
 *     {@code null} while the slot is {@linkplain #beingCreated() being created}
 * @param lagBytes WAL written since the confirmed position; 0 while the slot is being created
 * @param retainedBytes WAL the server keeps for the slot
 */
public record SlotStatus(
    String slot, boolean active, Integer activePid, String walStatus, String confirmedLsn, long lagBytes,
    long retainedBytes) {

  /**
   * Whether the server is still creating the slot: it has no confirmed position until every
   * transaction open when the creation began has ended, and nothing is streamed until then, though
   * the creating process shows the slot as active.
   */
  public boolean beingCreated() {
    return confirmedLsn == null;
  }

  /** What is done with the slot now, in words: being created, streamed, or not streamed. */
  public String state() {
    if (beingCreated()) {
      return "being created by server process " + activePid + ", which waits for every transaction open when it"
          + " began to end; nothing is streamed yet";
    }
    return active ? "streamed by server process " + activePid : "not streamed (no relay)";
  }

  /** Whether the server removed WAL the slot still needed: it can never be streamed again. */
  public boolean invalidated() {
    return "lost".equals(walStatus);
  }
}
