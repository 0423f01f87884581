package io.txbox.testkit;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * A fresh database on a real MariaDB server, dropped on close, so tests never see each other's
 * rows. Connects to {@code jdbc:mariadb://127.0.0.1:3306/} as {@code root} with no password, or
 * to the server URL in the environment variable {@value #URL_VARIABLE} (without a database).
 *
 * <pre>{@code
 * try (TestMariaDb db = TestMariaDb.create()) {
 *   MariaDbOutboxStore store = MariaDbOutboxStore.builder(db.dataSource()).build();
 * }
 * }</pre>
 */
public final class TestMariaDb implements AutoCloseable {
  /** Environment variable that overrides the server's JDBC URL. */
  public static final String URL_VARIABLE = "TXBOX_TEST_MARIADB_URL";
  private static final String DEFAULT_URL = "jdbc:mariadb://127.0.0.1:3306/";

  private final String database;
  private final HikariDataSource dataSource;

  private TestMariaDb(String database, HikariDataSource dataSource) {
    this.database = database;
    this.dataSource = dataSource;
  }

  /** Creates a database with a random name and a pool of up to 20 connections to it. */
  public static TestMariaDb create() {
    String database = "t_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    try (HikariDataSource server = TestDatabase.pool(withUser(serverUrl()), 1);
        Connection c = server.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE " + database);
    } catch (RuntimeException | SQLException e) {
      throw new IllegalStateException("cannot create a test database at " + serverUrl()
          + " (is MariaDB running? set " + URL_VARIABLE + " to point elsewhere)", e);
    }
    return new TestMariaDb(database, TestDatabase.pool(withUser(serverUrl() + database), 20));
  }

  /** The JDBC URL of the server, with no database and the user included: for tools that make their own. */
  public static String serverJdbcUrl() {
    return withUser(serverUrl());
  }

  private static String serverUrl() {
    String url = System.getenv(URL_VARIABLE);
    return url == null || url.isBlank() ? DEFAULT_URL : url;
  }

  private static String withUser(String url) {
    return url.contains("user=") ? url : url + "?user=root";
  }

  /** The JDBC URL of the database, user included. */
  public String jdbcUrl() {
    return withUser(serverUrl() + database);
  }

  /** The database's name. */
  public String database() {
    return database;
  }

  /** A pooled data source for the database. */
  public DataSource dataSource() {
    return dataSource;
  }

  /** Runs {@code sql} on a connection of its own, in auto-commit mode. */
  public void execute(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /** The first column of the first row {@code sql} returns. */
  public long queryLong(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Drops the database with everything in it and closes the pool. */
  @Override
  public void close() {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP DATABASE IF EXISTS " + database);
    } catch (SQLException e) {
      // a leftover database is only clutter
    } finally {
      dataSource.close();
    }
  }
}
