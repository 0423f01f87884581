package io.txbox.postgres;

import io.txbox.jdbc.OperatorStoreContract;
import io.txbox.testkit.TestDatabase;
import java.sql.SQLException;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;

/** PostgreSQL's dead letters and replays held to the operator contract, which MariaDB's pass too. */
class PostgresDeadLettersTest extends OperatorStoreContract {
  private TestDatabase db;

  @Override
  protected PostgresOutboxStore freshStore() {
    db = TestDatabase.create();
    PostgresOutboxStore store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(4).build();
    store.migrate();
    return store;
  }

  @Override
  protected DataSource dataSource() {
    return db.dataSource();
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
