package io.txbox.mariadb.internal;

import io.txbox.TxboxException;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.spi.JdbcOperatorStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * Creates txbox's tables on MariaDB. MariaDB commits every {@code CREATE} at once, so the
 * versions cannot share one transaction as on PostgreSQL: instead the migration runs under a
 * named lock ({@code GET_LOCK}), and a version counts as applied once its last statement, which
 * records it in the setting table, has run.
 */
public final class MariaDbMigration implements JdbcOperatorStore.Migration {
  private static final List<String> VERSIONS = List.of("V1__outbox.sql", "V2__inbox.sql", "V3__audit.sql",
      "V4__outbox_id.sql", "V5__relay_fences.sql");
  private static final int LOCK_SECONDS = 60;

  private final MariaDbTables tables;
  private final int buckets;

  /** Most buckets an outbox can have. */
  public static final int MAX_BUCKETS = 1024;

  /**
   * The migration of the tables {@code tables} names, refusing a bucket count out of its range,
   * named as the store's builder names it.
   */
  public static MariaDbMigration of(MariaDbTables tables, int buckets) {
    if (buckets < 1 || buckets > MAX_BUCKETS) {
      throw new IllegalArgumentException("buckets must be 1 to " + MAX_BUCKETS + ", was " + buckets);
    }
    return new MariaDbMigration(tables, buckets);
  }

  private MariaDbMigration(MariaDbTables tables, int buckets) {
    this.tables = tables;
    this.buckets = buckets;
  }

  /** Every version as one script, as the {@code mariadb} client or Flyway would run it. */
  public String script() {
    StringBuilder all = new StringBuilder();
    for (String version : VERSIONS) {
      all.append(render(version));
    }
    return all.toString();
  }

  /** Every version as a script of its own, numbered from 1. */
  public List<MigrationScript> scripts() {
    List<MigrationScript> scripts = new ArrayList<>();
    for (int v = 0; v < VERSIONS.size(); v++) {
      scripts.add(new MigrationScript(v + 1, VERSIONS.get(v), render(VERSIONS.get(v))));
    }
    return scripts;
  }

  /**
   * Applies the versions not applied yet; safe to run twice and from several instances at once.
   *
   * @return how many versions it applied
   */
  @Override
  public int run(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true);
      String lock = "txbox_migrate_" + tables.prefix();
      lock(c, lock);
      try {
        int applied = appliedVersion(c);
        for (int v = applied; v < VERSIONS.size(); v++) {
          try (Statement s = c.createStatement()) {
            for (String statement : statements(render(VERSIONS.get(v)))) {
              s.execute(statement);
            }
          }
        }
        return VERSIONS.size() - applied;
      } finally {
        try (PreparedStatement p = c.prepareStatement("SELECT RELEASE_LOCK(?)")) {
          p.setString(1, lock);
          p.executeQuery().close();
        }
      }
    } catch (SQLException e) {
      throw new TxboxException("migrating txbox's MariaDB tables failed: " + e.getMessage(), e);
    }
  }

  private static void lock(Connection c, String name) throws SQLException {
    try (PreparedStatement p = c.prepareStatement("SELECT GET_LOCK(?, ?)")) {
      p.setString(1, name);
      p.setInt(2, LOCK_SECONDS);
      try (ResultSet rs = p.executeQuery()) {
        if (!rs.next() || rs.getInt(1) != 1) {
          throw new SQLException("another migration held the lock " + name + " for " + LOCK_SECONDS + " s");
        }
      }
    }
  }

  /** The version the tables are at, 0 when there are none; refuses a different bucket count. */
  private int appliedVersion(Connection c) throws SQLException {
    // Asked first, so that a first migration makes the driver log no "table doesn't exist".
    try (PreparedStatement p = c.prepareStatement("SELECT COUNT(*) FROM information_schema.tables"
        + " WHERE table_schema = DATABASE() AND table_name = ?")) {
      p.setString(1, tables.prefix() + "setting");
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        if (rs.getInt(1) == 0) {
          return 0;
        }
      }
    }
    String settings = tables.render("SELECT name, value FROM {setting} WHERE name IN ('schema_version', 'bucket_count')");
    int version = 0;
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(settings)) {
      while (rs.next()) {
        int value = Integer.parseInt(rs.getString(2));
        if (rs.getString(1).equals("schema_version")) {
          version = value;
        } else if (value != buckets) {
          throw new IllegalStateException("buckets is " + buckets + " but the outbox was created with " + value
              + " buckets, and a key's bucket cannot change under a running outbox: set buckets(" + value + ")");
        }
      }
    }
    return version;
  }

  private String render(String version) {
    String resource = "/io/txbox/mariadb/" + version;
    try (InputStream in = MariaDbMigration.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("missing resource " + resource);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8)
          .replace("{prefix}", tables.prefix()).replace("{buckets}", Integer.toString(buckets));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The statements of a script: split at the delimiter, which a {@code DELIMITER} line changes as
   * in the {@code mariadb} client; whole-line {@code --} comments dropped.
   */
  static List<String> statements(String script) {
    List<String> statements = new ArrayList<>();
    String delimiter = ";";
    StringBuilder current = new StringBuilder();
    for (String line : script.split("\n")) {
      String trimmed = line.strip();
      if (trimmed.startsWith("--") || (trimmed.isEmpty() && current.length() == 0)) {
        continue;
      }
      if (trimmed.toUpperCase(java.util.Locale.ROOT).startsWith("DELIMITER ")) {
        delimiter = trimmed.substring("DELIMITER ".length()).strip();
        continue;
      }
      current.append(line).append('\n');
      if (trimmed.endsWith(delimiter)) {
        String statement = current.toString().strip();
        statements.add(statement.substring(0, statement.length() - delimiter.length()).strip());
        current.setLength(0);
      }
    }
    if (!current.toString().isBlank()) {
      statements.add(current.toString().strip());
    }
    return statements;
  }
}
