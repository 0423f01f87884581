package io.txbox.mariadb.internal;

import io.txbox.jdbc.spi.Transactions;
import io.txbox.spi.Backlog;
import io.txbox.spi.OpenTransaction;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * What the relay's gauges and its stall warning read on MariaDB: the backlog per subscription, and
 * the oldest open transaction that wrote, which may be holding the horizon back.
 */
public final class MariaDbStatus {
  /** Most characters of the oldest open transaction's statement read. */
  private static final int QUERY_LENGTH = 200;

  private final Transactions tx;
  /** The setting query, asked for {@code bucket_count}. */
  private final String setting;
  private final String checkpoints;
  private final String bucketBacklog;
  private final String oldestWriter;

  public MariaDbStatus(DataSource dataSource, MariaDbTables tables) {
    this.tx = new Transactions(dataSource);
    this.setting = MariaDbSql.of(tables).relay().setting();
    this.checkpoints = tables.render("SELECT bucket, position FROM {subscription} WHERE subscription = ?");
    // At most a limit of rows per bucket past its checkpoint, on the clustered key's range, so that
    // a gauge over a backlog of millions stays cheap.
    this.bucketBacklog = tables.render("SELECT COUNT(*), MIN(created_at) FROM (SELECT created_at FROM {outbox}"
        + " WHERE bucket = ? AND position > ? ORDER BY position LIMIT ?) AS pending");
    // innodb_trx shows other users' transactions only with the PROCESS privilege; without it this
    // finds none, and the warning stays silent rather than failing.
    this.oldestWriter = "SELECT t.trx_mysql_thread_id, TIMESTAMPDIFF(MICROSECOND, t.trx_started, NOW(6)),"
        + " COALESCE(p.USER, ''), COALESCE(p.DB, ''), COALESCE(p.COMMAND, ''), LEFT(COALESCE(t.trx_query, ''), "
        + QUERY_LENGTH + ") FROM information_schema.INNODB_TRX t"
        + " LEFT JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id"
        + " WHERE t.trx_rows_modified > 0 AND t.trx_mysql_thread_id <> CONNECTION_ID()"
        + " ORDER BY t.trx_started LIMIT 1";
  }

  /** Events past {@code subscription}'s checkpoints, at most {@code limitPerBucket} counted per bucket. */
  public Backlog backlog(String subscription, int limitPerBucket) {
    return tx.inTransaction("reading the backlog of " + subscription, c -> {
      long pending = 0;
      boolean capped = false;
      Instant oldest = null;
      try (PreparedStatement p = c.prepareStatement(bucketBacklog)) {
        for (Map.Entry<Integer, Long> checkpoint : checkpoints(c, subscription).entrySet()) {
          p.setInt(1, checkpoint.getKey());
          p.setLong(2, checkpoint.getValue());
          p.setInt(3, limitPerBucket);
          try (ResultSet rs = p.executeQuery()) {
            rs.next();
            long n = rs.getLong(1);
            pending += n;
            capped |= n >= limitPerBucket;
            Instant created = MariaDbDialect.INSTANCE.getInstant(rs, 2);
            oldest = created != null && (oldest == null || created.isBefore(oldest)) ? created : oldest;
          }
        }
      }
      return new Backlog(pending, capped, Optional.ofNullable(oldest));
    });
  }

  /** Each bucket's checkpoint; a subscription no relay opened yet starts at the beginning, in every bucket. */
  private Map<Integer, Long> checkpoints(Connection c, String subscription) throws SQLException {
    Map<Integer, Long> positions = new LinkedHashMap<>();
    try (PreparedStatement p = c.prepareStatement(checkpoints)) {
      p.setString(1, subscription);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          positions.put(rs.getInt(1), rs.getLong(2));
        }
      }
    }
    if (positions.isEmpty()) {
      try (PreparedStatement p = c.prepareStatement(setting)) {
        p.setString(1, "bucket_count");
        try (ResultSet rs = p.executeQuery()) {
          int buckets = rs.next() ? Integer.parseInt(rs.getString(1)) : 0;
          for (int b = 0; b < buckets; b++) {
            positions.put(b, 0L);
          }
        }
      }
    }
    return positions;
  }

  /** The oldest other transaction that has written and is still open, if the user may see it. */
  public Optional<OpenTransaction> oldestOpenTransaction() {
    return tx.inTransaction("reading the oldest open transaction", c -> {
      try (PreparedStatement p = c.prepareStatement(oldestWriter); ResultSet rs = p.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        return Optional.of(new OpenTransaction(rs.getInt(1), Duration.ofNanos(Math.max(0, rs.getLong(2)) * 1000),
            rs.getString(3), rs.getString(4), "", rs.getString(5), rs.getString(6)));
      }
    });
  }
}
