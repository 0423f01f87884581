package io.txbox.spi;

/**
 * A place in the outbox log: the writing transaction's id and the row's position. The log is
 * read in {@code (txId, position)} order, which is commit-safe where position order is not.
 *
 * <pre>{@code
 * Checkpoint start = Checkpoint.START;
 * boolean later = new Checkpoint(42, 7).compareTo(start) > 0;
 * }</pre>
 *
 * @param txId the transaction id (PostgreSQL {@code xid8}), 0 before the first event
 * @param position the row's position in the log, 0 before the first event
 */
public record Checkpoint(long txId, long position) implements Comparable<Checkpoint> {

  /** Before every event. */
  public static final Checkpoint START = new Checkpoint(0, 0);

  @Override
  public int compareTo(Checkpoint other) {
    int byTx = Long.compare(txId, other.txId);
    return byTx != 0 ? byTx : Long.compare(position, other.position);
  }
}
