package io.txbox.cdc.internal;

import java.time.Instant;
import java.util.List;

/**
 * A committed transaction's outbox events, in the order it wrote them. Transactions arrive in
 * commit order; {@code endLsn} is the position the slot may confirm once all of them are done.
 *
 * @param xid the transaction id (32 bits, as decoding reports it)
 * @param endLsn the end of the commit record: a restart after it never sees this transaction again
 * @param commitTime when the transaction committed
 * @param events the transaction's events; never empty
 * @param bucket the outbox bucket of rows the catch-up read from the table; -1 from the stream
 */
public record CommittedTransaction(long xid, long endLsn, Instant commitTime, List<StreamEvent> events, int bucket) {

  /** A transaction read from the stream. */
  public CommittedTransaction(long xid, long endLsn, Instant commitTime, List<StreamEvent> events) {
    this(xid, endLsn, commitTime, events, -1);
  }
}
