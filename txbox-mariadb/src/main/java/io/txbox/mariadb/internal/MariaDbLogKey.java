package io.txbox.mariadb.internal;

import io.txbox.jdbc.spi.LogKey;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * MariaDB's log order, the outbox's clustered key {@code (bucket, position)}; there is no
 * transaction id. The comparison is spelled out, since MariaDB reads a row comparison with no
 * index range.
 */
public final class MariaDbLogKey implements LogKey {
  public static final MariaDbLogKey INSTANCE = new MariaDbLogKey();

  private MariaDbLogKey() {}

  @Override
  public String columns() {
    return "o.bucket, '0', o.position";
  }

  @Override
  public String after() {
    return "(o.bucket > ? OR o.bucket = ? AND o.position > ?)";
  }

  @Override
  public int bindAfter(PreparedStatement p, int first, Cursor cursor) throws SQLException {
    p.setInt(first, cursor.bucket());
    p.setInt(first + 1, cursor.bucket());
    p.setLong(first + 2, cursor.position());
    return first + 3;
  }

  @Override
  public String order() {
    return "o.bucket, o.position";
  }

  @Override
  public String atOrBelowCheckpoint() {
    return "o.position <= s.position";
  }
}
