package io.txbox.mariadb;

import io.txbox.Message;
import io.txbox.spi.OutboxStore;
import io.txbox.testkit.OutboxStoreContract;
import io.txbox.testkit.TestMariaDb;
import java.sql.Connection;
import java.util.List;
import org.junit.jupiter.api.AfterEach;

/** The MariaDB store held to the store contract, which the PostgreSQL and in-memory stores pass too. */
class MariaDbOutboxStoreContractTest extends OutboxStoreContract {
  private TestMariaDb db;

  @Override
  protected OutboxStore freshStore() {
    db = TestMariaDb.create();
    MariaDbOutboxStore store = MariaDbOutboxStore.builder(db.dataSource()).buckets(8).build();
    store.migrate();
    return store.relay();
  }

  @Override
  protected void appendCommitted(List<Message> messages) throws Exception {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      store().append(c, messages);
      c.commit();
    }
  }

  @AfterEach
  void dropDatabase() {
    db.close();
  }
}
