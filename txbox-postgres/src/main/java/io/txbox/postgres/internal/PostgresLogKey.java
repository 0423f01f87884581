package io.txbox.postgres.internal;

import io.txbox.jdbc.spi.LogKey;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * PostgreSQL's log order, the outbox's primary key {@code (bucket, tx_id, position)}: compared as
 * a row, so that a page is one index range scan.
 */
public final class PostgresLogKey implements LogKey {
  public static final PostgresLogKey INSTANCE = new PostgresLogKey();

  private PostgresLogKey() {}

  @Override
  public String columns() {
    return "o.bucket, o.tx_id::text, o.position";
  }

  @Override
  public String after() {
    return "(o.bucket, o.tx_id, o.position) > (?, ?::xid8, ?)";
  }

  @Override
  public int bindAfter(PreparedStatement p, int first, Cursor cursor) throws SQLException {
    p.setInt(first, cursor.bucket());
    p.setString(first + 1, cursor.txId());
    p.setLong(first + 2, cursor.position());
    return first + 3;
  }

  @Override
  public String order() {
    return "o.bucket, o.tx_id, o.position";
  }

  @Override
  public String atOrBelowCheckpoint() {
    return "(o.tx_id, o.position) <= (s.tx_id, s.position)";
  }
}
