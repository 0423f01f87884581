package io.txbox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.Inbox;
import io.txbox.InboxQueue;
import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.spi.OutboxStore;
import io.txbox.testkit.JanitorStoreContract;
import io.txbox.testkit.TestDatabase;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The janitor on PostgreSQL: the janitor contract, and the inbox records it deletes or keeps. */
class PostgresJanitorTest extends JanitorStoreContract {
  private TestDatabase db;
  private PostgresOutboxStore store;

  @Override
  protected Parts freshStore() {
    db = TestDatabase.create();
    store = newStore();
    store.migrate();
    return new Parts(store.relay(), store.janitor());
  }

  @Override
  protected OutboxStore storeOnSameTables() {
    return newStore().relay();
  }

  private PostgresOutboxStore newStore() {
    return PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(4).build();
  }

  @Override
  protected DataSource dataSource() {
    return db.dataSource();
  }

  @Override
  protected long outboxRows() throws SQLException {
    return db.queryLong("SELECT count(*) FROM {s}.txbox_outbox");
  }

  @AfterEach
  void dropSchema() {
    db.close();
  }

  @Test
  void inboxRecordsOlderThanTheDedupWindowAreRemoved() throws SQLException {
    Inbox inbox = Inbox.create(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build());
    for (int i = 0; i < 30; i++) {
      inbox.receive("inventory", Message.builder().type("T").destination("d").payload(new byte[0]).build(),
          (tx, m, key) -> { });
    }
    db.execute("UPDATE {s}.txbox_inbox SET received_at = now() - interval '40 days'"
        + " WHERE message_id IN (SELECT message_id FROM {s}.txbox_inbox LIMIT 20)");
    Janitor.Cleanup done = Janitor.builder(store.janitor()).batchSize(6).build().runOnce();
    assertThat(done.inboxRecords()).isEqualTo(20);
    assertThat(db.queryLong("SELECT count(*) FROM {s}.txbox_inbox")).isEqualTo(10);
  }

  @Test
  void queuedMessagesKeepTheirInboxRecordHoweverOld() throws SQLException {
    InboxQueue queue = InboxQueue.builder(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build(),
        "billing", (tx, m, key) -> { }).build(); // not started: the messages stay queued
    for (int i = 0; i < 5; i++) {
      queue.enqueue(Message.builder().type("T").destination("d").payload(new byte[0]).build());
    }
    db.execute("UPDATE {s}.txbox_inbox SET received_at = now() - interval '40 days'");
    assertThat(Janitor.builder(store.janitor()).build().runOnce().inboxRecords()).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM {s}.txbox_inbox WHERE status = 'queued'")).isEqualTo(5);
  }
}
