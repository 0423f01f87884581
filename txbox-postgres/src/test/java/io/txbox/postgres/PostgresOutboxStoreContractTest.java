package io.txbox.postgres;

import io.txbox.Message;
import io.txbox.spi.OutboxStore;
import io.txbox.testkit.OutboxStoreContract;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.util.List;
import org.junit.jupiter.api.AfterEach;

/** The PostgreSQL store held to the store contract, which the in-memory store passes too. */
class PostgresOutboxStoreContractTest extends OutboxStoreContract {
  private TestDatabase db;

  @Override
  protected OutboxStore freshStore() {
    db = database();
    PostgresOutboxStore store = configure(PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(8))
        .build();
    store.migrate();
    return store.relay();
  }

  /** Where the store's tables are, and how it connects; the test database, directly, here. */
  TestDatabase database() {
    return TestDatabase.create();
  }

  /** The store's settings beyond schema and buckets; none here. */
  PostgresOutboxStore.Builder configure(PostgresOutboxStore.Builder builder) {
    return builder;
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
  void dropSchema() {
    db.close();
  }
}
