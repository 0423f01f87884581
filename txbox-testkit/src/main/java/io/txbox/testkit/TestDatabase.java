package io.txbox.testkit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.spi.support.Secrets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * A fresh schema in a real PostgreSQL database, dropped on close, so tests never see each other's
 * rows. Connects to {@code jdbc:postgresql://127.0.0.1:5432/test} as {@code postgres}, or to the
 * URL in the environment variable {@value #URL_VARIABLE}.
 *
 * <p>A test JVM Maven starts gets a database of its own on that server, named for it (system
 * property {@value #JVM_PROPERTY}, the module and Surefire's fork number: {@code test_txbox_kafka_1}),
 * created when missing, so that modules and forks can run at once. Schemas alone would not keep
 * them apart: the table relay waits for every open transaction of its own database, so a test
 * holding one open would stall the relays of every test running beside it.
 *
 * <pre>{@code
 * try (TestDatabase db = TestDatabase.create()) {
 *   PostgresOutboxStore store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build();
 * }
 * }</pre>
 */
public final class TestDatabase implements AutoCloseable {
  /** Environment variable that overrides the JDBC URL. */
  public static final String URL_VARIABLE = "TXBOX_TEST_JDBC_URL";
  private static final String DEFAULT_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";
  /** System property naming this test JVM among those that may run at once: module and fork number. */
  public static final String JVM_PROPERTY = "txbox.test.jvm";
  private static String jvmUrl;

  private final String schema;
  private final HikariDataSource dataSource;

  private TestDatabase(String schema, HikariDataSource dataSource) {
    this.schema = schema;
    this.dataSource = dataSource;
  }

  /** The JDBC URL tests connect to: this test JVM's own database when Maven named the JVM. */
  public static String jdbcUrl() {
    String url = System.getenv(URL_VARIABLE);
    String given = url == null || url.isBlank() ? DEFAULT_URL : url;
    String jvm = System.getProperty(JVM_PROPERTY, "");
    return jvm.isBlank() ? given : jvmDatabase(given, jvm);
  }

  /** The URL of database {@code <given's>_<jvm>} on {@code given}'s server, created the first time. */
  private static synchronized String jvmDatabase(String given, String jvm) {
    if (jvmUrl == null) {
      java.net.URI uri = java.net.URI.create(given.substring("jdbc:".length()));
      String database = (uri.getPath().substring(1) + "_" + jvm).toLowerCase(java.util.Locale.ROOT)
          .replaceAll("[^a-z0-9_]", "_");
      try (Connection c = java.sql.DriverManager.getConnection(given); Statement s = c.createStatement()) {
        boolean exists;
        try (ResultSet rs = s.executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + database + "'")) {
          exists = rs.next();
        }
        if (!exists) {
          s.execute("CREATE DATABASE " + database);
        }
      } catch (SQLException e) {
        if (!"42P04".equals(e.getSQLState())) { // created by another JVM just now: as good
          throw new IllegalStateException("cannot create test database " + database + " at "
              + Secrets.maskUrl(given), e);
        }
      }
      jvmUrl = given.replaceFirst("(//[^/]*/)[^?]*", "$1" + database);
    }
    return jvmUrl;
  }

  /** Creates a schema with a random name and a pool of up to 20 connections. */
  public static TestDatabase create() {
    return create(jdbcUrl());
  }

  /**
   * As {@link #create()}, its pool connecting through {@code url}: the test database reached
   * another way, such as through a {@link PgBouncer} ({@link #throughPooler}).
   */
  public static TestDatabase create(String url) {
    String schema = "t_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    HikariDataSource ds = pool(url, 20);
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + schema);
    } catch (SQLException e) {
      ds.close();
      throw new IllegalStateException("cannot create a test schema at " + Secrets.maskUrl(jdbcUrl())
          + " (is PostgreSQL running? set " + URL_VARIABLE + " to point elsewhere)", e);
    }
    return new TestDatabase(schema, ds);
  }

  /**
   * A PgBouncer in {@code mode} in front of the test database's server, at most {@code poolSize}
   * server connections; the caller closes it.
   */
  public static PgBouncer pooler(PgBouncer.Mode mode, int poolSize) {
    java.net.URI server = java.net.URI.create(jdbcUrl().substring("jdbc:".length()));
    return PgBouncer.start(mode, server.getHost(), server.getPort() < 0 ? 5432 : server.getPort(), poolSize);
  }

  /**
   * The test database's URL through {@code pooler}, with {@code prepareThreshold=0} as pgjdbc
   * advises behind a pooler that lends server connections per transaction.
   */
  public static String throughPooler(PgBouncer pooler) {
    String path = java.net.URI.create(jdbcUrl().substring("jdbc:".length())).getPath();
    return pooler.jdbcUrl(path.substring(1)) + "&prepareThreshold=0";
  }

  /** A HikariCP pool for {@code url}. */
  public static HikariDataSource pool(String url, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(1);
    config.setPoolName("txbox-test");
    // Retries a first connection that fails for a moment instead of failing the test at once; a
    // server that is really down still fails within the timeout. Seen once in CI: the first
    // connection closed during Hikari's isolation check, with nothing in the server's log.
    config.setInitializationFailTimeout(10_000);
    return new HikariDataSource(config);
  }

  /** The schema's name. */
  public String schema() {
    return schema;
  }

  /** A pooled data source for the database. */
  public DataSource dataSource() {
    return dataSource;
  }

  /** Runs {@code sql} in a transaction of its own, {@code {s}} standing for the schema. */
  public void execute(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql.replace("{s}", schema));
    }
  }

  /** The first column of the first row {@code sql} returns, {@code {s}} standing for the schema. */
  public long queryLong(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql.replace("{s}", schema))) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Drops the schema with everything in it and closes the pool. */
  @Override
  public void close() {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } catch (SQLException e) {
      // a leftover schema is only clutter
    } finally {
      dataSource.close();
    }
  }
}
