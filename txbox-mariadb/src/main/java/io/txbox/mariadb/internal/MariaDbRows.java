package io.txbox.mariadb.internal;

import io.txbox.Message;
import io.txbox.jdbc.support.JsonHeaders;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.StoredMessage;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;

/**
 * Binds parameters and maps rows for the statements of {@link MariaDbSql}. The store keeps no
 * transaction id: a checkpoint is a position alone, its {@code txId} always 0.
 */
public final class MariaDbRows {
  private MariaDbRows() {}

  public static void bindAppend(PreparedStatement p, Message m) throws SQLException {
    p.setString(1, m.id().toString());
    p.setString(2, m.key());
    p.setString(3, m.type());
    p.setInt(4, m.version());
    p.setString(5, m.destination());
    p.setBytes(6, m.payload());
    p.setString(7, m.contentType());
    p.setString(8, JsonHeaders.write(m.headers()));
    p.setObject(9, utc(m.createdAt()));
    p.setObject(10, m.availableAt() == null ? null : utc(m.availableAt()));
  }

  /**
   * Maps a row of the read, by column position (see MariaDbSql.readBucket). A row that breaks the
   * message rules (written with plain SQL) comes back unreadable, with the rule it breaks, so that
   * the relay dead-letters it and goes on.
   */
  public static StoredMessage storedMessage(ResultSet rs) throws SQLException {
    int bucket = rs.getInt(1);
    Checkpoint checkpoint = new Checkpoint(0, rs.getLong(2));
    try {
      return new StoredMessage(bucket, checkpoint, MariaDbDialect.INSTANCE.message(rs, 3));
    } catch (RuntimeException e) {
      return StoredMessage.unreadable(bucket, checkpoint, "event " + rs.getString(3) + ": " + e.getMessage());
    }
  }

  public static BucketState bucketState(ResultSet rs) throws SQLException {
    return new BucketState(
        rs.getInt("bucket"), new Checkpoint(0, rs.getLong("position")), rs.getInt("attempts"),
        instant(rs, rs.findColumn("next_attempt_at")));
  }

  /** A UTC {@code DATETIME(6)} column as an instant, or {@code null}. */
  public static Instant instant(ResultSet rs, int column) throws SQLException {
    LocalDateTime at = rs.getObject(column, LocalDateTime.class);
    return at == null ? null : at.toInstant(ZoneOffset.UTC);
  }

  /** An instant as the UTC {@code DATETIME(6)} the tables hold. */
  public static LocalDateTime utc(Instant instant) {
    return LocalDateTime.ofInstant(instant, ZoneOffset.UTC);
  }
}
