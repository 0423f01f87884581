package io.txbox.mariadb.internal;

import io.txbox.jdbc.support.Transactions;
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
 * The janitor's part of the MariaDB outbox: deletes events every subscription has relayed, and
 * inbox records past their retention, one janitor at a time. {@link io.txbox.mariadb.MariaDbOutboxStore} hands its {@link JanitorStore}
 * calls here.
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
public final class MariaDbJanitorStore implements JanitorStore {
  private final Transactions tx;
  /** Only one janitor at a time: a row lock tried, never waited for, on a row every outbox has. */
  private final String takeTurn;
  private final String lowestCheckpoints;
  private final String headIsDue;
  private final String windowEnd;
  private final String deleteRelayed;
  private final String deleteInboxRecords;

  public MariaDbJanitorStore(DataSource dataSource, MariaDbTables tables) {
    this.tx = new Transactions(dataSource);
    this.takeTurn = tables.render("SELECT name FROM {setting} WHERE name = 'bucket_count' FOR UPDATE SKIP LOCKED");
    this.lowestCheckpoints = tables.render("SELECT bucket, MIN(position) FROM {subscription} GROUP BY bucket");
    // Due: past the retention, or dated in the future (a writer's clock or a hostile row), which
    // must not keep the bucket from being looked at.
    this.headIsDue = tables.render("SELECT created_at < " + MariaDbSql.NOW + " - INTERVAL ? MICROSECOND"
        + " OR created_at > " + MariaDbSql.NOW
        + " FROM {outbox} WHERE bucket = ? AND position <= ? ORDER BY position LIMIT 1");
    this.windowEnd = tables.render("SELECT MAX(position) FROM (SELECT position FROM {outbox}"
        + " WHERE bucket = ? AND position <= ? ORDER BY position LIMIT ?) AS w");
    this.deleteRelayed = tables.render("DELETE FROM {outbox} WHERE bucket = ? AND position <= ?"
        + " AND created_at < " + MariaDbSql.NOW + " - INTERVAL ? MICROSECOND");
    // The records of messages still queued, dead or parked stay: they keep a redelivery a duplicate.
    this.deleteInboxRecords = tables.render("DELETE FROM {inbox} WHERE received_at < " + MariaDbSql.NOW
        + " - INTERVAL ? MICROSECOND AND status NOT IN ('queued', 'dead', 'parked') ORDER BY received_at LIMIT ?");
  }

  /**
   * {@inheritDoc}
   *
   * <p>An event is relayed once its position is at or below its bucket's checkpoint in every
   * subscription; with no subscription yet, nothing is.
   */
  @Override
  public OptionalInt deleteRelayed(Duration retention, int limit) {
    long retentionMicros = retention.toNanos() / 1000;
    return underJanitorTurn("deleting relayed outbox events", c -> deleteRelayed(c, retentionMicros, limit));
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

  @Override
  public OptionalInt deleteInboxRecords(Duration retention, int limit) {
    return underJanitorTurn("deleting old inbox records", c -> {
      try (PreparedStatement p = c.prepareStatement(deleteInboxRecords)) {
        p.setLong(1, retention.toNanos() / 1000);
        p.setInt(2, limit);
        return p.executeUpdate();
      }
    });
  }

  private boolean tookTurn(Connection c) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(takeTurn); ResultSet rs = p.executeQuery()) {
      return rs.next();
    }
  }

  private boolean headIsDue(Connection c, int bucket, long checkpoint, long retentionMicros) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(headIsDue)) {
      p.setLong(1, retentionMicros);
      p.setInt(2, bucket);
      p.setLong(3, checkpoint);
      try (ResultSet rs = p.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  private Map<Integer, Long> lowestCheckpoints(Connection c) throws SQLException {
    Map<Integer, Long> low = new LinkedHashMap<>();
    try (PreparedStatement p = c.prepareStatement(lowestCheckpoints); ResultSet rs = p.executeQuery()) {
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
    try (PreparedStatement p = c.prepareStatement(windowEnd)) {
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
    try (PreparedStatement p = c.prepareStatement(deleteRelayed)) {
      p.setInt(1, bucket);
      p.setLong(2, end);
      p.setLong(3, retentionMicros);
      return p.executeUpdate();
    }
  }
}
