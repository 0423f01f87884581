package io.txbox.mariadb;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.spi.BucketRead;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.StoredMessage;
import io.txbox.testkit.TestMariaDb;
import java.nio.charset.StandardCharsets;
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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The janitor on MariaDB: what it may delete, one janitor at a time, and that writers and relays go on. */
class MariaDbJanitorTest {
  private static final int BUCKETS = 4;
  private static final Instant TWO_DAYS_AGO = Instant.now().minus(Duration.ofDays(2));
  private TestMariaDb db;
  private MariaDbOutboxStore store;
  private Outbox outbox;

  @BeforeEach
  void createDatabase() {
    db = TestMariaDb.create();
    store = MariaDbOutboxStore.builder(db.dataSource()).buckets(BUCKETS).build();
    store.migrate();
    store.openSubscription("fast");
    store.openSubscription("slow");
    outbox = Outbox.create(store);
  }

  @AfterEach
  void dropDatabase() {
    db.close();
  }

  @Test
  void onlyEventsEverySubscriptionRelayedAndPastRetentionAreRemoved() throws SQLException {
    write(0, 100, TWO_DAYS_AGO);
    write(100, 20, Instant.now());
    long cutoff = db.queryLong("SELECT position FROM txbox_outbox ORDER BY position LIMIT 1 OFFSET 49");
    checkpoint("fast", Long.MAX_VALUE);
    checkpoint("slow", cutoff);

    Janitor janitor = Janitor.builder(store).outboxRetention(Duration.ofDays(1)).batchSize(7).build();
    Janitor.Cleanup done = janitor.runOnce();

    assertThat(done.outboxEvents()).isEqualTo(50);
    assertThat(db.queryLong("SELECT COUNT(*) FROM txbox_outbox")).isEqualTo(70);
    assertThat(db.queryLong("SELECT COUNT(*) FROM txbox_outbox WHERE position <= " + cutoff)).isZero();
    assertThat(janitor.runOnce().outboxEvents()).as("a second run finds nothing more").isZero();
  }

  @Test
  void anEventDatedInTheFutureStopsNothingButItself() throws SQLException {
    db.execute("INSERT INTO txbox_outbox (`key`, type, destination, payload, created_at)"
        + " VALUES ('k0', 'T', 'd', x'01', UTC_TIMESTAMP(6) + INTERVAL 10 YEAR)");
    write(1, 30, TWO_DAYS_AGO); // k0 shares its bucket with some of these, behind it
    checkpoint("fast", Long.MAX_VALUE);
    checkpoint("slow", Long.MAX_VALUE);

    assertThat(Janitor.builder(store).outboxRetention(Duration.ofDays(1)).build().runOnce().outboxEvents())
        .isEqualTo(30);
    assertThat(db.queryLong("SELECT COUNT(*) FROM txbox_outbox")).isEqualTo(1);
  }

  @Test
  void aBucketWhoseOldestRelayedEventIsWithinTheRetentionIsPassedOver() throws SQLException {
    write(0, 20, Instant.now());
    write(20, 20, TWO_DAYS_AGO); // older by their clock, but behind young events in every bucket
    checkpoint("fast", Long.MAX_VALUE);
    checkpoint("slow", Long.MAX_VALUE);

    assertThat(Janitor.builder(store).outboxRetention(Duration.ofDays(1)).build().runOnce().outboxEvents())
        .as("they go once the events before them do").isZero();
    assertThat(db.queryLong("SELECT COUNT(*) FROM txbox_outbox")).isEqualTo(40);
  }

  @Test
  void nothingIsRemovedWhileNoSubscriptionHasRelayedIt() throws SQLException {
    write(0, 30, TWO_DAYS_AGO);
    assertThat(Janitor.builder(store).build().runOnce().outboxEvents()).isZero();
    assertThat(db.queryLong("SELECT COUNT(*) FROM txbox_outbox")).isEqualTo(30);
  }

  @Test
  void janitorsRacingEachOtherDeleteEveryRowOnce() throws Exception {
    write(0, 200, TWO_DAYS_AGO);
    checkpoint("fast", Long.MAX_VALUE);
    checkpoint("slow", Long.MAX_VALUE);
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      List<Future<Janitor.Cleanup>> runs = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        runs.add(pool.submit(() -> Janitor.builder(store).batchSize(5).build().runOnce()));
      }
      long deleted = 0;
      for (Future<Janitor.Cleanup> run : runs) {
        deleted += run.get(60, TimeUnit.SECONDS).outboxEvents();
      }
      deleted += Janitor.builder(store).build().runOnce().outboxEvents();
      assertThat(deleted).isEqualTo(200);
      assertThat(db.queryLong("SELECT COUNT(*) FROM txbox_outbox")).isZero();
    } finally {
      pool.shutdown();
    }
  }

  @Test
  void writersKeepCommittingIntoEveryBucketWhileTheJanitorDeletesItToTheEnd() throws Exception {
    db.execute("INSERT INTO txbox_outbox (`key`, type, destination, payload, created_at)"
        + " SELECT CONCAT('k', seq), 'T', 'd', x'01', UTC_TIMESTAMP(6) - INTERVAL 2 DAY FROM seq_1_to_20000");
    checkpoint("fast", Long.MAX_VALUE);
    checkpoint("slow", Long.MAX_VALUE);
    AtomicBoolean janitorRunning = new AtomicBoolean(true);
    AtomicLong commitsDuringCleanup = new AtomicLong();
    AtomicLong slowestCommitMillis = new AtomicLong();
    CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
      for (int i = 0; janitorRunning.get(); i++) {
        long start = System.nanoTime();
        write(i, 1, Instant.now());
        slowestCommitMillis.accumulateAndGet((System.nanoTime() - start) / 1_000_000, Math::max);
        commitsDuringCleanup.incrementAndGet();
      }
    });
    Janitor.Cleanup done = Janitor.builder(store).batchSize(1000).build().runOnce();
    janitorRunning.set(false);
    writer.get(60, TimeUnit.SECONDS);
    assertThat(done.outboxEvents()).isEqualTo(20000);
    assertThat(commitsDuringCleanup.get()).isPositive();
    // The deletes run at READ COMMITTED and lock no gap, so a writer waits for no delete to
    // commit (under REPEATABLE READ it would, for one batch, where a delete scans to a bucket's end).
    assertThat(slowestCommitMillis.get()).as("no writer waited on the janitor's deletes for long").isLessThan(2000);
  }

  @Test
  void aRelayStartingAfterTheJanitorEmptiedTheLogReadsWhatFollowsAtOnce() throws SQLException {
    write(0, 40, TWO_DAYS_AGO);
    checkpoint("fast", Long.MAX_VALUE);
    checkpoint("slow", Long.MAX_VALUE);
    assertThat(Janitor.builder(store).build().runOnce().outboxEvents()).isEqualTo(40);
    write(40, 3, Instant.now());

    MariaDbOutboxStore restarted = MariaDbOutboxStore.builder(db.dataSource()).buckets(BUCKETS).build();
    List<String> read = new ArrayList<>();
    for (int b = 0; b < BUCKETS; b++) {
      long checkpoint = db.queryLong("SELECT position FROM txbox_subscription WHERE subscription = 'fast' AND bucket = " + b);
      for (StoredMessage m : restarted.read("fast", List.of(new BucketRead(b, new Checkpoint(0, checkpoint), 100)))) {
        read.add(new String(m.message().payload(), StandardCharsets.UTF_8));
      }
    }
    assertThat(read).containsExactlyInAnyOrder("40", "41", "42");
  }

  /** Events {@code first} to {@code first + count - 1}, one per transaction, created at {@code createdAt}. */
  private void write(int first, int count, Instant createdAt) {
    for (int i = first; i < first + count; i++) {
      try (Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        outbox.send(c, Message.builder().type("T").destination("d").key("k" + i)
            .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).createdAt(createdAt).build());
        c.commit();
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  /** Moves {@code subscription}'s checkpoint in every bucket to its newest event at or below {@code cutoff}. */
  private void checkpoint(String subscription, long cutoff) throws SQLException {
    db.execute("UPDATE txbox_subscription s SET position = COALESCE((SELECT MAX(o.position) FROM txbox_outbox o"
        + " WHERE o.bucket = s.bucket AND o.position <= " + cutoff + "), 0) WHERE subscription = '" + subscription + "'");
  }
}
