package io.txbox.jdbc;

import io.txbox.testkit.TestDatabase;
import io.txbox.Message;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;

/** PostgreSQL's dead letters and replays held to the operator contract, which MariaDB's pass too. */
class PostgresDeadLettersTest extends OperatorStoreContract {
  private TestDatabase db;
  private PostgresOutboxStore store;

  @Override
  protected OperatorStore freshStore() {
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(4).build();
    store.migrate();
    return store;
  }

  @Override
  protected void appendCommitted(List<Message> messages) throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      store.append(c, messages);
      c.commit();
    }
  }

  @Override
  protected long outboxRowsWithId(UUID id) throws SQLException {
    return db.queryLong("SELECT count(*) FROM {s}.txbox_outbox WHERE id = '" + id + "'");
  }

  @Override
  protected void emptyTheTypeOfDeadLetter(UUID id) throws SQLException {
    db.execute("UPDATE {s}.txbox_dead_letter SET type = '' WHERE id = '" + id + "'");
  }

  @AfterEach
  void dropSchema() {
    db.close();
  }
}
