package io.txbox.mariadb;

import io.txbox.jdbc.OperatorStoreContract;
import io.txbox.testkit.TestMariaDb;
import java.sql.SQLException;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;

/** MariaDB's dead letters and replays held to the operator contract, which PostgreSQL's pass too. */
class MariaDbDeadLettersTest extends OperatorStoreContract {
  private TestMariaDb db;

  @Override
  protected MariaDbOutboxStore freshStore() {
    db = TestMariaDb.create();
    MariaDbOutboxStore store = MariaDbOutboxStore.builder(db.dataSource()).buckets(4).build();
    store.migrate();
    return store;
  }

  @Override
  protected DataSource dataSource() {
    return db.dataSource();
  }

  @Override
  protected long outboxRowsWithId(UUID id) throws SQLException {
    return db.queryLong("SELECT COUNT(*) FROM txbox_outbox WHERE id = '" + id + "'");
  }

  @Override
  protected void emptyTheTypeOfDeadLetter(UUID id) throws SQLException {
    db.execute("UPDATE txbox_dead_letter SET type = '' WHERE id = '" + id + "'");
  }

  @AfterEach
  void dropDatabase() {
    db.close();
  }
}
