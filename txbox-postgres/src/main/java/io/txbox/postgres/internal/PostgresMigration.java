package io.txbox.postgres.internal;

import io.txbox.TxboxException;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.spi.JdbcOperatorStore;
import io.txbox.postgres.PostgresTables;
import io.txbox.spi.support.Rollback;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates and upgrades txbox's tables. All versions run in one transaction under an advisory
 * lock, so running it twice, or from several instances at once, applies each version once.
 */
public final class PostgresMigration implements JdbcOperatorStore.Migration {
  private static final Logger log = LoggerFactory.getLogger(PostgresMigration.class);

  /** The versions in order; each is a resource {@code postgres/V<n>__<name>.sql}. */
  private static final List<String> VERSIONS = List.of(
      "V1__outbox.sql", "V2__inbox.sql", "V3__inbox_queue.sql", "V4__outbox_checks.sql",
      "V5__inbox_dead_letters.sql", "V6__audit.sql", "V7__inbox_retry_requests.sql",
      "V8__outbox_check_function.sql", "V9__slot_checkpoint.sql", "V10__outbox_id.sql", "V11__relay_fences.sql");

  /** Most buckets an outbox can have. */
  public static final int MAX_BUCKETS = 1024;
  /** Fewest positions per outbox partition. */
  public static final long MIN_PARTITION_SIZE = 1_000;
  /** Most positions per outbox partition. */
  public static final long MAX_PARTITION_SIZE = 1_000_000_000;

  private final PostgresTables tables;
  private final int buckets;
  private final long partitionSize;
  private final int partitionsAhead;

  /**
   * The migration of the tables {@code tables} names, refusing settings out of their range, named
   * as the store's builder names them.
   *
   * @param partitionSize positions per outbox partition, or 0 to leave the outbox as it is (a
   *     plain table, unless an earlier migration partitioned it)
   */
  public static PostgresMigration of(PostgresTables tables, int buckets, long partitionSize, int partitionsAhead) {
    if (buckets < 1 || buckets > MAX_BUCKETS) {
      throw new IllegalArgumentException(
          "buckets must be >= 1 and <= " + MAX_BUCKETS + ", was " + buckets);
    }
    if (partitionSize != 0 && (partitionSize < MIN_PARTITION_SIZE
        || partitionSize > MAX_PARTITION_SIZE)) {
      throw new IllegalArgumentException("outboxPartitionSize must be 0 (a plain table) or >= "
          + MIN_PARTITION_SIZE + " and <= " + MAX_PARTITION_SIZE
          + ", was " + partitionSize);
    }
    if (partitionsAhead < 1 || partitionsAhead > 100) {
      throw new IllegalArgumentException("partitionsAhead must be >= 1 and <= 100, was " + partitionsAhead);
    }
    return new PostgresMigration(tables, buckets, partitionSize, partitionsAhead);
  }

  private PostgresMigration(PostgresTables tables, int buckets, long partitionSize, int partitionsAhead) {
    this.tables = tables;
    this.buckets = buckets;
    this.partitionSize = partitionSize;
    this.partitionsAhead = partitionsAhead;
  }

  /** How many schema versions exist. */
  public static int latestVersion() {
    return VERSIONS.size();
  }

  /**
   * Every version as SQL that creates what {@link #run} creates and records the version as
   * {@code run} does, so that either may follow the other.
   */
  public List<MigrationScript> scripts() {
    List<MigrationScript> scripts = new ArrayList<>();
    for (int v = 1; v <= VERSIONS.size(); v++) {
      String name = VERSIONS.get(v - 1);
      StringBuilder sql = new StringBuilder();
      if (v == 1) {
        sql.append("CREATE SCHEMA IF NOT EXISTS ").append(tables.schema()).append(";\n")
            .append(createVersionTable()).append(";\n\n");
      }
      sql.append(render(name)).append("\n")
          .append("INSERT INTO ").append(tables.schemaVersion()).append(" (version, name) VALUES (")
          .append(v).append(", '").append(name).append("');\n");
      scripts.add(new MigrationScript(v, name, sql.toString()));
    }
    return scripts;
  }

  /** Applies the missing versions; returns how many were applied. */
  @Override
  public int run(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        int applied = applyMissing(c);
        c.commit();
        return applied;
      } catch (SQLException | RuntimeException e) {
        Rollback.after(c, e);
        throw e;
      }
    } catch (SQLException e) {
      throw new TxboxException("migration of schema '" + tables.schema() + "' with table prefix '"
          + tables.prefix() + "' failed: " + e.getMessage(), e);
    }
  }

  private int applyMissing(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA IF NOT EXISTS " + tables.schema());
    }
    try (PreparedStatement lock = c.prepareStatement("SELECT pg_advisory_xact_lock(hashtext(?))")) {
      lock.setString(1, "txbox migration " + tables.channel());
      lock.execute();
    }
    try (Statement s = c.createStatement()) {
      s.execute(createVersionTable());
    }
    int current = currentVersion(c);
    if (current >= 1) {
      checkBucketCount(c);
    }
    for (int v = current + 1; v <= VERSIONS.size(); v++) {
      apply(c, v, VERSIONS.get(v - 1));
    }
    if (partitionSize > 0) {
      if (!OutboxPartitions.isPartitioned(c, tables)) {
        OutboxPartitions.convert(c, tables, partitionSize, partitionsAhead);
      }
      OutboxPartitions.saveSize(c, tables, partitionSize);
    }
    return VERSIONS.size() - current;
  }

  private int currentVersion(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT coalesce(max(version), 0) FROM " + tables.schemaVersion())) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private void checkBucketCount(Connection c) throws SQLException {
    int existing = PostgresSettings.bucketCount(c, tables);
    if (existing != buckets) {
      throw new TxboxException("buckets is " + buckets + " but the outbox in schema '" + tables.schema()
          + "' was created with " + existing + " buckets; set buckets to " + existing
          + " (changing the bucket count of an existing outbox is not supported)");
    }
  }

  private String createVersionTable() {
    return "CREATE TABLE IF NOT EXISTS " + tables.schemaVersion()
        + " (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())";
  }

  private String render(String resource) {
    return tables.render(read(resource)).replace("{buckets}", Integer.toString(buckets));
  }

  private void apply(Connection c, int version, String resource) throws SQLException {
    String sql = render(resource);
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
    try (PreparedStatement p = c.prepareStatement(
        "INSERT INTO " + tables.schemaVersion() + " (version, name) VALUES (?, ?)")) {
      p.setInt(1, version);
      p.setString(2, resource);
      p.executeUpdate();
    }
    log.info("applied txbox schema version {} ({}) to schema {}", version, resource, tables.schema());
  }

  private static String read(String resource) {
    try (InputStream in = PostgresMigration.class.getResourceAsStream("/io/txbox/postgres/" + resource)) {
      if (in == null) {
        throw new IllegalStateException("missing migration resource " + resource);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read migration resource " + resource, e);
    }
  }
}
