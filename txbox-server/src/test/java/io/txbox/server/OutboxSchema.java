package io.txbox.server;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.List;
import java.util.UUID;

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
      Outbox.create(store.writer()).send(c, messages);
      c.commit();
    }
  }

  /** A dead letter of subscription default, written with plain SQL as any writer could: no builder checks it. */
  void deadLetter(String key, String type, String error) throws Exception {
    deadLetter(key, type, error, new byte[] {1});
  }

  /** A dead letter as above, with {@code payload}; returns its event id. */
  UUID deadLetter(String key, String type, String error, byte[] payload) throws Exception {
    UUID id = UUID.randomUUID();
    try (Connection c = db.dataSource().getConnection(); PreparedStatement p = c.prepareStatement("INSERT INTO "
        + name() + ".txbox_dead_letter (subscription, position, tx_id, id, bucket, key, type, version, destination,"
        + " payload, content_type, headers, created_at, error, attempts) VALUES ('default', nextval(pg_get_serial_sequence('"
        + name() + ".txbox_outbox', 'position')), '1', ?, 0, ?, ?, 1, 'orders', ?,"
        + " 'application/octet-stream', '{}', now(), ?, 10)")) {
      p.setObject(1, id);
      p.setString(2, key);
      p.setString(3, type);
      p.setBytes(4, payload);
      p.setString(5, error);
      p.executeUpdate();
    }
    return id;
  }

  @Override
  public void close() {
    db.close();
  }
}
