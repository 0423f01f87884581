package io.txbox.server;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.util.List;

/** A schema of its own with txbox's tables, and a way to write events into it as an application does. */
final class OutboxSchema implements AutoCloseable {
  final TestDatabase db = TestDatabase.create();
  final PostgresOutboxStore store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build();

  OutboxSchema() {
    store.migrate();
  }

  /** The schema's name. */
  String name() {
    return db.schema();
  }

  /** Sends {@code messages} in one committed transaction. */
  void send(List<Message> messages) throws Exception {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      Outbox.create(store).send(c, messages);
      c.commit();
    }
  }

  @Override
  public void close() {
    db.close();
  }
}
