package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/** The benchmark schema: recreated each run, with a business table beside the outbox. */
final class BenchDatabase implements AutoCloseable {
  static final String SCHEMA = "txbox_bench";
  final HikariDataSource dataSource;

  BenchDatabase(String jdbcUrl, int poolSize) throws SQLException {
    dataSource = TestDatabase.pool(jdbcUrl, poolSize);
    execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE", "CREATE SCHEMA " + SCHEMA,
        "CREATE TABLE " + SCHEMA + ".orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            + " customer text NOT NULL, amount numeric(12, 2) NOT NULL,"
            + " created_at timestamptz NOT NULL DEFAULT now())");
  }

  PostgresOutboxStore.Builder store() {
    return PostgresOutboxStore.builder(dataSource).schema(SCHEMA);
  }

  void execute(String... statements) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    }
  }

  /** The first column of the first row {@code sql} returns. */
  long queryLong(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** A server setting as {@code SHOW} prints it, for a benchmark's results. */
  String setting(String name) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('" + name.replace("'", "") + "')")) {
      rs.next();
      return rs.getString(1);
    }
  }

  @Override
  public void close() {
    dataSource.close();
  }
}
