package io.txbox.postgres;

import io.txbox.testkit.InboxQueueContract;
import io.txbox.testkit.TestDatabase;
import javax.sql.DataSource;

/** The PostgreSQL inbox queue held to the inbox queue contract. */
class PostgresInboxQueueTest extends InboxQueueContract<PostgresInboxStore> {
  private TestDatabase db;
  private PostgresInboxStore store;

  @Override
  protected DataSource freshDatabase() {
    db = TestDatabase.create();
    PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build().migrate();
    store = PostgresInboxStore.builder().schema(db.schema()).build();
    return db.dataSource();
  }

  @Override
  protected PostgresInboxStore store() {
    return store;
  }

  @Override
  protected String table(String name) {
    return db.schema() + "." + name;
  }

  @Override
  protected void dropDatabase() {
    db.close();
  }
}
