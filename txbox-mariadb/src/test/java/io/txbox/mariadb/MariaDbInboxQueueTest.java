package io.txbox.mariadb;

import io.txbox.testkit.InboxQueueContract;
import io.txbox.testkit.TestMariaDb;
import javax.sql.DataSource;

/** The MariaDB inbox queue held to the inbox queue contract, which the PostgreSQL one passes too. */
class MariaDbInboxQueueTest extends InboxQueueContract<MariaDbInboxStore> {
  private TestMariaDb db;
  private final MariaDbInboxStore store = MariaDbInboxStore.builder().build();

  @Override
  protected DataSource freshDatabase() {
    db = TestMariaDb.create();
    MariaDbOutboxStore.builder(db.dataSource()).build().migrate();
    return db.dataSource();
  }

  @Override
  protected MariaDbInboxStore store() {
    return store;
  }

  @Override
  protected String table(String name) {
    return name;
  }

  @Override
  protected void dropDatabase() {
    db.close();
  }
}
