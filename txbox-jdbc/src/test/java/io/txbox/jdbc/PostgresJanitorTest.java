package io.txbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.Inbox;
import io.txbox.InboxQueue;
import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PostgresJanitorTest {
  private TestDatabase db;
  private PostgresOutboxStore store;
  private Outbox outbox;

  @BeforeEach
  void createSchema() {
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(4).build();
    store.migrate();
    outbox = Outbox.create(store);
    store.openSubscription("fast");
    store.openSubscription("slow");
  }

  @AfterEach
  void dropSchema() {
    db.close();
  }

  private void write(int count, Instant createdAt) throws SQLException {
    for (int i = 0; i < count; i++) {
      try (Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        outbox.send(c, Message.builder().type("T").destination("d").key("k" + i).payload(new byte[] {1})
            .createdAt(createdAt).build());
        c.commit();
      }
    }
  }

  private long query(String sql) throws SQLException {
    return db.queryLong(sql);
  }

  private void execute(String sql) throws SQLException {
    db.execute(sql);
  }

  /** "fast" has relayed everything; "slow" has relayed the events up to position {@code cutoff}. */
  private void checkpoint(long cutoff) throws SQLException {
    execute("UPDATE {s}.txbox_subscription s SET (tx_id, position) = (SELECT o.tx_id, o.position"
        + " FROM {s}.txbox_outbox o WHERE o.bucket = s.bucket ORDER BY o.tx_id DESC, o.position DESC LIMIT 1)"
        + " WHERE subscription = 'fast' AND EXISTS (SELECT 1 FROM {s}.txbox_outbox o WHERE o.bucket = s.bucket)");
    execute("UPDATE {s}.txbox_subscription s SET (tx_id, position) = (SELECT o.tx_id, o.position"
        + " FROM {s}.txbox_outbox o WHERE o.bucket = s.bucket AND o.position <= " + cutoff
        + " ORDER BY o.tx_id DESC, o.position DESC LIMIT 1) WHERE subscription = 'slow'"
        + " AND EXISTS (SELECT 1 FROM {s}.txbox_outbox o WHERE o.bucket = s.bucket AND o.position <= " + cutoff + ")");
  }

  @Test
  void onlyEventsEverySubscriptionRelayedAndPastRetentionAreRemoved() throws SQLException {
    write(100, Instant.now().minus(Duration.ofDays(2)));
    write(20, Instant.now());
    long cutoff = query("SELECT position FROM {s}.txbox_outbox ORDER BY position OFFSET 49 LIMIT 1");
    checkpoint(Long.MAX_VALUE);
    execute("UPDATE {s}.txbox_subscription SET tx_id = '0', position = 0 WHERE subscription = 'slow'");
    checkpoint(cutoff);

    Janitor janitor = Janitor.builder(store).outboxRetention(Duration.ofDays(1)).batchSize(7).build();
    Janitor.Cleanup done = janitor.runOnce();

    assertThat(done.outboxEvents()).isEqualTo(50);
    assertThat(query("SELECT count(*) FROM {s}.txbox_outbox")).isEqualTo(70);
    assertThat(query("SELECT count(*) FROM {s}.txbox_outbox WHERE position <= " + cutoff)).isZero();
    assertThat(janitor.runOnce().outboxEvents()).as("a second run finds nothing more").isZero();
  }

  @Test
  void nothingIsRemovedWhileNoSubscriptionHasRelayedIt() throws SQLException {
    write(30, Instant.now().minus(Duration.ofDays(2)));
    assertThat(Janitor.builder(store).build().runOnce().outboxEvents()).isZero();
    assertThat(query("SELECT count(*) FROM {s}.txbox_outbox")).isEqualTo(30);
  }

  @Test
  void inboxRecordsOlderThanTheDedupWindowAreRemoved() throws SQLException {
    Inbox inbox = Inbox.create(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build());
    for (int i = 0; i < 30; i++) {
      inbox.receive("inventory", Message.builder().type("T").destination("d").payload(new byte[0]).build(),
          (tx, m, key) -> { });
    }
    execute("UPDATE {s}.txbox_inbox SET received_at = now() - interval '40 days'"
        + " WHERE message_id IN (SELECT message_id FROM {s}.txbox_inbox LIMIT 20)");
    Janitor.Cleanup done = Janitor.builder(store).batchSize(6).build().runOnce();
    assertThat(done.inboxRecords()).isEqualTo(20);
    assertThat(query("SELECT count(*) FROM {s}.txbox_inbox")).isEqualTo(10);
  }

  @Test
  void queuedMessagesKeepTheirInboxRecordHoweverOld() throws SQLException {
    InboxQueue queue = InboxQueue.builder(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build(),
        "billing", (tx, m, key) -> { }).build(); // not started: the messages stay queued
    for (int i = 0; i < 5; i++) {
      queue.enqueue(Message.builder().type("T").destination("d").payload(new byte[0]).build());
    }
    execute("UPDATE {s}.txbox_inbox SET received_at = now() - interval '40 days'");
    assertThat(Janitor.builder(store).build().runOnce().inboxRecords()).isZero();
    assertThat(query("SELECT count(*) FROM {s}.txbox_inbox WHERE status = 'queued'")).isEqualTo(5);
  }

  @Test
  void janitorsRacingEachOtherDeleteEveryRowOnce() throws Exception {
    write(200, Instant.now().minus(Duration.ofDays(2)));
    checkpoint(Long.MAX_VALUE);
    execute("UPDATE {s}.txbox_subscription SET (tx_id, position) = (SELECT tx_id, position FROM {s}.txbox_subscription f"
        + " WHERE f.subscription = 'fast' AND f.bucket = txbox_subscription.bucket) WHERE subscription = 'slow'");
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      List<Future<Janitor.Cleanup>> runs = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        runs.add(pool.submit(() -> Janitor.builder(store).batchSize(5).build().runOnce()));
      }
      long deleted = 0;
      for (Future<Janitor.Cleanup> run : runs) {
        deleted += run.get().outboxEvents();
      }
      Janitor.Cleanup rest = Janitor.builder(store).build().runOnce();
      assertThat(deleted + rest.outboxEvents()).isEqualTo(200);
      assertThat(query("SELECT count(*) FROM {s}.txbox_outbox")).isZero();
    } finally {
      pool.shutdown();
    }
  }

  @Test
  void writersKeepCommittingWhileTheJanitorDeletes() throws Exception {
    execute("INSERT INTO {s}.txbox_outbox (key, type, destination, payload, created_at)"
        + " SELECT 'k' || g, 'T', 'd', '\\x01', now() - interval '2 days' FROM generate_series(1, 20000) g");
    checkpoint(Long.MAX_VALUE);
    execute("UPDATE {s}.txbox_subscription SET (tx_id, position) = (SELECT tx_id, position FROM {s}.txbox_subscription f"
        + " WHERE f.subscription = 'fast' AND f.bucket = txbox_subscription.bucket) WHERE subscription = 'slow'");
    AtomicBoolean janitorRunning = new AtomicBoolean(true);
    AtomicLong commitsDuringCleanup = new AtomicLong();
    AtomicLong slowestCommitMillis = new AtomicLong();
    CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
      try {
        while (janitorRunning.get()) {
          long start = System.nanoTime();
          write(1, Instant.now());
          slowestCommitMillis.accumulateAndGet((System.nanoTime() - start) / 1_000_000, Math::max);
          commitsDuringCleanup.incrementAndGet();
        }
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    });
    Janitor.Cleanup done = Janitor.builder(store).batchSize(1000).build().runOnce();
    janitorRunning.set(false);
    writer.get();
    assertThat(done.outboxEvents()).isEqualTo(20000);
    assertThat(commitsDuringCleanup.get()).isPositive();
    assertThat(slowestCommitMillis.get()).as("no writer waited on the janitor's deletes for long").isLessThan(2000);
  }
}
