package io.txbox.server;

import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** An exactly-once drill on PostgreSQL: a schema of its own, and its outbox read back to count. */
abstract class PostgresExactlyOnceDrill extends ExactlyOnceDrill {
  TestDatabase db;
  PostgresOutboxStore store;

  @BeforeEach
  void setUp() {
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build();
    store.migrate();
  }

  @AfterEach
  void tearDown() {
    db.close();
  }

  @Override
  List<String> databaseArgs() {
    return List.of("--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema());
  }

  @Override
  DataSource dataSource() {
    return db.dataSource();
  }

  @Override
  Outbox outbox() {
    return Outbox.create(store.writer());
  }

  @Override
  Map<String, List<String>> expectedByKey() throws SQLException {
    return OutboxRows.byKey(db.dataSource(), store.operator().outboxTable());
  }

  @Override
  int owners() throws SQLException {
    return OutboxRows.owners(db.dataSource(), db.schema());
  }

  @Override
  long deadLetters() throws SQLException {
    return count("SELECT count(*) FROM {schema}.txbox_dead_letter");
  }

  int count(String sql) throws SQLException {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(sql.replace("{schema}", db.schema()));
        ResultSet rs = p.executeQuery()) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
