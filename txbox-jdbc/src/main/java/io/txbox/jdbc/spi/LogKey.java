package io.txbox.jdbc.spi;

import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * How a database's outbox orders its log: the key a replay pages by, in each bucket the relay's
 * order, and how an event compares with a subscription's checkpoint. The outbox row is aliased
 * {@code o}, the subscription row {@code s}. PostgreSQL's key is {@code (bucket, tx_id, position)},
 * MariaDB's {@code (bucket, position)}.
 *
 * <pre>{@code
 * LogKey key = new LogKey() {
 *   public String columns() { return "o.bucket, '0', o.position"; }
 *   ...
 * };
 * }</pre>
 */
public interface LogKey {
  /** Three select-list columns: bucket, transaction as text ({@code '0'} where there is none), position. */
  String columns();

  /** The condition that {@code o} comes after a cursor, whose parameters {@link #bindAfter} binds. */
  String after();

  /** Binds {@link #after()} from parameter {@code first}; returns the next parameter. */
  int bindAfter(PreparedStatement p, int first, Cursor cursor) throws SQLException;

  /** The {@code ORDER BY} list of the key. */
  String order();

  /** The condition that event {@code o} is at or below subscription row {@code s}'s checkpoint. */
  String atOrBelowCheckpoint();

  /** A place in the log: the key of its last row read. */
  record Cursor(int bucket, String txId, long position) {
    /** Before the first event. */
    public static final Cursor START = new Cursor(-1, "0", 0);
  }
}
