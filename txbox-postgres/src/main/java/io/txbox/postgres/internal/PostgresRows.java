package io.txbox.postgres.internal;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.StoredMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.List;

/** Binds parameters and maps rows for the statements of {@link PostgresSql}. */
public final class PostgresRows {
  private PostgresRows() {}

  public static void bindAppend(PreparedStatement p, Connection c, Message m) throws SQLException {
    p.setObject(1, m.id());
    p.setString(2, m.key());
    p.setString(3, m.type());
    p.setInt(4, m.version());
    p.setString(5, m.destination());
    p.setBytes(6, m.payload());
    p.setString(7, m.contentType());
    String[] names = m.headers().keySet().toArray(String[]::new);
    String[] values = new String[names.length];
    for (int i = 0; i < names.length; i++) {
      values[i] = m.headers().get(names[i]);
    }
    p.setArray(8, c.createArrayOf("text", names));
    p.setArray(9, c.createArrayOf("text", values));
    p.setObject(10, utc(m.createdAt()));
    p.setObject(11, m.availableAt() == null ? null : utc(m.availableAt()));
  }

  /** Binds the dead-letter copy statement: the letter's place, its whole event, its error. */
  public static void bindDeadLetterCopy(PreparedStatement p, Connection c, DeadLetter d) throws SQLException {
    Message m = d.message();
    p.setString(1, d.subscription());
    p.setLong(2, d.position().position());
    p.setString(3, Long.toUnsignedString(d.position().txId()));
    p.setObject(4, m.id());
    p.setInt(5, d.bucket());
    p.setString(6, m.key());
    p.setString(7, m.type());
    p.setInt(8, m.version());
    p.setString(9, m.destination());
    p.setBytes(10, m.payload());
    p.setString(11, m.contentType());
    String[] names = m.headers().keySet().toArray(String[]::new);
    p.setArray(12, c.createArrayOf("text", names));
    p.setArray(13, c.createArrayOf("text", Arrays.stream(names).map(m.headers()::get).toArray(String[]::new)));
    p.setObject(14, utc(m.createdAt()));
    p.setString(15, d.error());
    p.setInt(16, d.attempts());
  }

  public static void bindReads(PreparedStatement p, Connection c, List<BucketRead> reads)
      throws SQLException {
    int n = reads.size();
    Integer[] buckets = new Integer[n];
    String[] txIds = new String[n];
    Long[] positions = new Long[n];
    Integer[] limits = new Integer[n];
    for (int i = 0; i < n; i++) {
      BucketRead r = reads.get(i);
      buckets[i] = r.bucket();
      txIds[i] = Long.toUnsignedString(r.after().txId());
      positions[i] = r.after().position();
      limits[i] = r.limit();
    }
    p.setArray(1, c.createArrayOf("int4", buckets));
    p.setArray(2, c.createArrayOf("text", txIds));
    p.setArray(3, c.createArrayOf("int8", positions));
    p.setArray(4, c.createArrayOf("int4", limits));
  }

  /**
   * Maps a row of the batch read, by column position (see PostgresSql.read). A row that breaks
   * the message rules (written with plain SQL before the table checked them, say) comes back
   * unreadable, with the rule it breaks, so that the relay dead-letters it and goes on.
   */
  public static StoredMessage storedMessage(ResultSet rs) throws SQLException {
    int bucket = rs.getInt(1);
    Checkpoint checkpoint = new Checkpoint(rs.getLong(2), rs.getLong(3));
    try {
      return new StoredMessage(bucket, checkpoint, PostgresDialect.INSTANCE.message(rs, 4));
    } catch (RuntimeException e) {
      return StoredMessage.unreadable(bucket, checkpoint, "event " + rs.getString(4) + ": " + e.getMessage());
    }
  }

  public static BucketState bucketState(ResultSet rs) throws SQLException {
    OffsetDateTime next = rs.getObject("next_attempt_at", OffsetDateTime.class);
    return new BucketState(
        rs.getInt("bucket"),
        new Checkpoint(Long.parseUnsignedLong(rs.getString("tx_text")), rs.getLong("position")),
        rs.getInt("attempts"),
        next == null ? null : next.toInstant());
  }

  /** Binds parameters 1 to 6 of the save-progress statement. */
  public static void bindProgress(PreparedStatement p, Connection c, List<BucketProgress> progress)
      throws SQLException {
    int n = progress.size();
    Integer[] buckets = new Integer[n];
    String[] txIds = new String[n];
    Long[] positions = new Long[n];
    Integer[] attempts = new Integer[n];
    String[] nextAttempts = new String[n];
    String[] errors = new String[n];
    for (int i = 0; i < n; i++) {
      BucketProgress bp = progress.get(i);
      buckets[i] = bp.bucket();
      txIds[i] = Long.toUnsignedString(bp.checkpoint().txId());
      positions[i] = bp.checkpoint().position();
      attempts[i] = bp.attempts();
      nextAttempts[i] = bp.nextAttemptAt() == null ? null : bp.nextAttemptAt().toString();
      errors[i] = bp.lastError();
    }
    p.setArray(1, c.createArrayOf("int4", buckets));
    p.setArray(2, c.createArrayOf("text", txIds));
    p.setArray(3, c.createArrayOf("int8", positions));
    p.setArray(4, c.createArrayOf("int4", attempts));
    p.setArray(5, c.createArrayOf("text", nextAttempts));
    p.setArray(6, c.createArrayOf("text", errors));
  }

  private static OffsetDateTime utc(Instant instant) {
    return instant.atOffset(ZoneOffset.UTC);
  }
}
