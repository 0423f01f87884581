package io.txbox.postgres.internal;

import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.StoreStatus;
import io.txbox.jdbc.spi.JdbcOperatorStore;
import io.txbox.jdbc.spi.JdbcStatus;
import io.txbox.postgres.PostgresTables;
import io.txbox.spi.OutboxStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The operator's part of the PostgreSQL outbox: the shared {@link JdbcOperatorStore} with what is
 * PostgreSQL's own in its status (the idle buckets below the horizon, the minutes, the partitions).
 */
public final class PostgresOperatorStore {
  private PostgresOperatorStore() {}

  /** Counts backlogs and the oldest open transaction through {@code relayPart}, as relays' meters do. */
  public static OperatorStore create(DataSource dataSource, PostgresTables tables, OutboxStore relayPart,
      PostgresMigration migration) {
    JdbcStatus status = new JdbcStatus(tables, PostgresDialect.INSTANCE, idleBuckets(tables),
        writtenPerMinute(tables), c -> partitions(c, tables));
    return new JdbcOperatorStore(dataSource, new JdbcOperatorStore.Parts(tables, PostgresDialect.INSTANCE,
        PostgresLogKey.INSTANCE, tables.outbox(), status, relayPart, migration));
  }

  /**
   * The first event each held bucket would read next (below the horizon, so not one that an open
   * transaction legitimately holds back), when it has been due longer than the limit while the
   * checkpoint stood still: one index probe per bucket whose checkpoint is that old.
   */
  private static String idleBuckets(PostgresTables tables) {
    String limit = "now() - interval '" + StoreStatus.NOT_MOVING_AFTER.toSeconds() + " seconds'";
    return tables.render("SELECT s.subscription, s.bucket, s.owner, s.updated_at"
        + " FROM {subscription} s, (SELECT " + PostgresSql.HORIZON + " AS horizon FROM pg_current_snapshot() AS s) h"
        + " WHERE s.owner IS NOT NULL AND s.lease_until > now() AND s.last_error IS NULL AND s.updated_at < " + limit
        + " AND (SELECT greatest(o.created_at, coalesce(o.available_at, o.created_at)) FROM {outbox} o"
        + "   WHERE o.bucket = s.bucket AND (o.tx_id, o.position) > (s.tx_id, s.position) AND o.tx_id < h.horizon"
        + "   ORDER BY o.tx_id, o.position LIMIT 1) < " + limit
        + " ORDER BY s.subscription, s.bucket LIMIT " + StoreStatus.MAX_IDLE_BUCKETS);
  }

  /** A scan of the log's last minutes: the janitor keeps the log short, so this stays cheap. */
  private static String writtenPerMinute(PostgresTables tables) {
    return tables.render("SELECT date_trunc('minute', created_at) AS minute, count(*)"
        + " FROM {outbox} WHERE created_at >= date_trunc('minute', now()) - make_interval(mins => ?)"
        + " GROUP BY 1 ORDER BY 1");
  }

  /** A partitioned outbox's partitions and the rows that went to its default partition. */
  private static Optional<StoreStatus.OutboxPartitions> partitions(Connection c, PostgresTables tables)
      throws SQLException {
    if (!OutboxPartitions.isPartitioned(c, tables)) {
      return Optional.empty();
    }
    OutboxPartitions.Layout layout = OutboxPartitions.layout(c, tables);
    long rowsInDefault = 0;
    if (layout.defaultPartition() != null) {
      try (PreparedStatement p = c.prepareStatement("SELECT count(*) FROM (SELECT 1 FROM " + tables.schema() + "."
          + layout.defaultPartition() + " LIMIT " + StoreStatus.DEFAULT_PARTITION_COUNT_LIMIT + ") AS d");
          ResultSet rs = p.executeQuery()) {
        rs.next();
        rowsInDefault = rs.getLong(1);
      }
    }
    int ahead = (int) layout.ranges().stream().filter(r -> r.from() > layout.handedOut()).count();
    return Optional.of(new StoreStatus.OutboxPartitions(layout.ranges().size(), ahead, rowsInDefault));
  }
}
