package io.txbox.jdbc.spi;

import io.txbox.spi.JanitorStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalInt;
import javax.sql.DataSource;

/**
 * The janitor's part of a table outbox in plain JDBC ({@link JanitorSql}): deletes events every
 * subscription has relayed, bucket by bucket, and inbox records past their retention, one janitor
 * at a time. PostgreSQL's store deletes in one statement, or drops partitions, instead.
 *
 * <pre>{@code
 * JanitorStore janitor = new JdbcJanitorStore(dataSource, MySql.janitor(tables));
 * }</pre>
 *
 * <p>Each call is one transaction at {@code READ COMMITTED}: under InnoDB's default
 * {@code REPEATABLE READ} a delete also locks the gap after the last row it scans, and when that
 * gap runs to the end of a bucket, it would block every writer of the bucket until the delete
 * commits. The scan is bounded too. A bucket whose oldest relayed event is still within the
 * retention is passed over after reading that one row: events are appended roughly in time order,
 * so the rest are younger, and a day of events kept for the retention is not read on every run.
 * Otherwise only the first {@code limit} rows in position order are looked at, so that one event
 * dated in the future by its writer stops nothing but itself.
 */
public final class JdbcJanitorStore implements JanitorStore {
  private final Transactions tx;
  private final JanitorSql sql;

  public JdbcJanitorStore(DataSource dataSource, JanitorSql sql) {
    this.tx = new Transactions(dataSource);
    this.sql = sql;
  }

  /**
   * {@inheritDoc}
   *
   * <p>An event is relayed once its position is at or below its bucket's checkpoint in every
   * subscription; with no subscription yet, nothing is.
   */
  @Override
  public OptionalInt deleteRelayed(Duration retention, int limit) {
    long retentionMicros = micros(retention);
    return underJanitorTurn("deleting relayed outbox events", c -> deleteRelayed(c, retentionMicros, limit));
  }

  @Override
  public OptionalInt deleteInboxRecords(Duration retention, int limit) {
    return underJanitorTurn("deleting old inbox records", c -> {
      try (PreparedStatement p = c.prepareStatement(sql.deleteInboxRecords())) {
        p.setLong(1, micros(retention));
        p.setInt(2, limit);
        return p.executeUpdate();
      }
    });
  }

  /** A delete of the janitor's, in one transaction; empty when another janitor has its turn. */
  private OptionalInt underJanitorTurn(String what, Delete delete) {
    return tx.inReadCommitted(what, c -> tookTurn(c) ? OptionalInt.of(delete.run(c)) : OptionalInt.empty());
  }

  /** Deletes rows; how many. */
  @FunctionalInterface
  private interface Delete {
    int run(Connection c) throws SQLException;
  }

  private boolean tookTurn(Connection c) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(sql.takeTurn()); ResultSet rs = p.executeQuery()) {
      return rs.next();
    }
  }

  private int deleteRelayed(Connection c, long retentionMicros, int limit) throws SQLException {
    int deleted = 0;
    for (Map.Entry<Integer, Long> low : lowestCheckpoints(c).entrySet()) {
      if (deleted >= limit) {
        break;
      }
      deleted += deleteInBucket(c, low.getKey(), low.getValue(), retentionMicros, limit - deleted);
    }
    return deleted;
  }

  private Map<Integer, Long> lowestCheckpoints(Connection c) throws SQLException {
    Map<Integer, Long> low = new LinkedHashMap<>();
    try (PreparedStatement p = c.prepareStatement(sql.lowestCheckpoints()); ResultSet rs = p.executeQuery()) {
      while (rs.next()) {
        low.put(rs.getInt(1), rs.getLong(2));
      }
    }
    return low;
  }

  /** Deletes the old enough events among the first {@code window} relayed ones of a bucket. */
  private int deleteInBucket(Connection c, int bucket, long checkpoint, long retentionMicros, int window)
      throws SQLException {
    if (!headIsDue(c, bucket, checkpoint, retentionMicros)) {
      return 0;
    }
    long end;
    try (PreparedStatement p = c.prepareStatement(sql.windowEnd())) {
      p.setInt(1, bucket);
      p.setLong(2, checkpoint);
      p.setInt(3, window);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        end = rs.getLong(1);
        if (rs.wasNull()) {
          return 0;
        }
      }
    }
    try (PreparedStatement p = c.prepareStatement(sql.deleteRelayed())) {
      p.setInt(1, bucket);
      p.setLong(2, end);
      p.setLong(3, retentionMicros);
      return p.executeUpdate();
    }
  }

  private boolean headIsDue(Connection c, int bucket, long checkpoint, long retentionMicros) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(sql.headIsDue())) {
      p.setLong(1, retentionMicros);
      p.setInt(2, bucket);
      p.setLong(3, checkpoint);
      try (ResultSet rs = p.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  private static long micros(Duration d) {
    return d.toNanos() / 1_000;
  }
}
