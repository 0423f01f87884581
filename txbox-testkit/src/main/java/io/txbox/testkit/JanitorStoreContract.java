package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.JanitorStore;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.StoredMessage;
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
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What every store's janitor half ({@link JanitorStore}) must do: delete only what every
 * subscription relayed and the retention let go, each row once however many janitors race, without
 * holding writers back, and without losing the place of a relay that starts after it. A store's
 * test extends this class; the subscriptions are moved on through the store's own relay methods,
 * so that the contract needs no SQL of any database. Which relayed events past the retention a run
 * may pass over is the store's choice (MariaDB deletes each bucket's oldest events first, so a
 * young event holds back older ones behind it; PostgreSQL goes by age alone): the contract asks
 * only that nothing unrelayed or young goes.
 *
 * <pre>{@code
 * class MariaDbJanitorContractTest extends JanitorStoreContract {
 *   protected Parts freshStore() { ... }                  // its relay part and its janitor part
 *   protected OutboxStore storeOnSameTables() { ... }     // as a restarted relay builds it
 *   protected DataSource dataSource() { ... }
 *   protected long outboxRows() { ... }
 * }
 * }</pre>
 */
public abstract class JanitorStoreContract {
  private static final Instant TWO_DAYS_AGO = Instant.now().minus(Duration.ofDays(2));
  private static final Duration LEASE = Duration.ofMinutes(2);
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String RELAY = "janitor-contract";

  private OutboxStore store;
  private JanitorStore janitorStore;
  private int buckets;
  private final AtomicLong appended = new AtomicLong();

  /**
   * The two parts of one store the contract uses: the relays', through which it moves the
   * subscriptions on, and the janitor's, which it tests.
   */
  public record Parts(OutboxStore relay, JanitorStore janitor) {}

  /** A new, empty store, its tables created. */
  protected abstract Parts freshStore() throws Exception;

  /** The relay part of another store on the tables of {@link #freshStore()}, as a restarted relay would build it. */
  protected abstract OutboxStore storeOnSameTables() throws Exception;

  /** Where the store's tables are: the contract appends through the store, in transactions of its own. */
  protected abstract DataSource dataSource();

  /** How many events the outbox table holds. */
  protected abstract long outboxRows() throws Exception;

  @BeforeEach
  void openStore() throws Exception {
    Parts parts = freshStore();
    store = parts.relay();
    janitorStore = parts.janitor();
    buckets = store.openSubscription("fast");
    store.openSubscription("slow");
  }

  @Test
  void onlyEventsEverySubscriptionRelayedAndPastRetentionAreRemoved() throws Exception {
    write(0, 100, TWO_DAYS_AGO);
    write(100, 20, Instant.now());
    relay("fast", Integer.MAX_VALUE);
    relay("slow", 50);

    Janitor janitor = janitor(Duration.ofDays(1), 7);
    assertThat(janitor.runOnce().outboxEvents()).isEqualTo(50);
    assertThat(outboxRows()).isEqualTo(70);
    assertThat(janitor.runOnce().outboxEvents()).as("a second run finds nothing more").isZero();
  }

  @Test
  void nothingIsRemovedWhileNoSubscriptionHasRelayedIt() throws Exception {
    write(0, 30, TWO_DAYS_AGO);
    relay("fast", Integer.MAX_VALUE);
    assertThat(janitor(Duration.ofDays(1), 100).runOnce().outboxEvents()).as("slow relayed nothing").isZero();
    assertThat(outboxRows()).isEqualTo(30);
  }

  @Test
  void anEventDatedInTheFutureStopsNothingButItself() throws Exception {
    write(0, 1, Instant.now().plus(Duration.ofDays(3650)));
    write(1, 30, TWO_DAYS_AGO); // some share its bucket, behind it
    relay("fast", Integer.MAX_VALUE);
    relay("slow", Integer.MAX_VALUE);

    assertThat(janitor(Duration.ofDays(1), 100).runOnce().outboxEvents()).isEqualTo(30);
    assertThat(outboxRows()).isEqualTo(1);
  }

  @Test
  void janitorsRacingEachOtherDeleteEveryRowOnce() throws Exception {
    write(0, 200, TWO_DAYS_AGO);
    relay("fast", Integer.MAX_VALUE);
    relay("slow", Integer.MAX_VALUE);
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      List<Future<Janitor.Cleanup>> runs = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        runs.add(pool.submit(() -> janitor(Duration.ofDays(1), 5).runOnce()));
      }
      long deleted = 0;
      for (Future<Janitor.Cleanup> run : runs) {
        deleted += run.get(WAIT.toSeconds(), TimeUnit.SECONDS).outboxEvents();
      }
      deleted += janitor(Duration.ofDays(1), 1000).runOnce().outboxEvents();
      assertThat(deleted).isEqualTo(200);
      assertThat(outboxRows()).isZero();
    } finally {
      pool.shutdown();
    }
  }

  @Test
  void writersKeepCommittingWhileTheJanitorDeletes() throws Exception {
    for (int i = 0; i < 20; i++) {
      write(i * 1000, 1000, TWO_DAYS_AGO, 1000);
    }
    relay("fast", Integer.MAX_VALUE);
    relay("slow", Integer.MAX_VALUE);
    AtomicBoolean janitorRunning = new AtomicBoolean(true);
    AtomicLong commitsDuringCleanup = new AtomicLong();
    AtomicLong slowestCommitMillis = new AtomicLong();
    CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
      for (int i = 20_000; janitorRunning.get(); i++) {
        long start = System.nanoTime();
        write(i, 1, Instant.now());
        slowestCommitMillis.accumulateAndGet((System.nanoTime() - start) / 1_000_000, Math::max);
        commitsDuringCleanup.incrementAndGet();
      }
    });
    Janitor.Cleanup done = janitor(Duration.ofDays(1), 1000).runOnce();
    janitorRunning.set(false);
    writer.get(WAIT.toSeconds(), TimeUnit.SECONDS);

    assertThat(done.outboxEvents()).isEqualTo(20_000);
    assertThat(commitsDuringCleanup.get()).isPositive();
    // A bound for a lock wait, not a speed: a writer blocked behind a delete waits for its batch.
    assertThat(slowestCommitMillis.get()).as("no writer waited on the janitor's deletes for long").isLessThan(2000);
  }

  @Test
  void aRelayStartingAfterTheJanitorEmptiedTheLogReadsWhatFollowsAndNothingElse() throws Exception {
    write(0, 40, TWO_DAYS_AGO);
    relay("fast", Integer.MAX_VALUE);
    relay("slow", Integer.MAX_VALUE);
    assertThat(janitor(Duration.ofDays(1), 1000).runOnce().outboxEvents()).isEqualTo(40);
    write(40, 3, Instant.now());

    OutboxStore restarted = storeOnSameTables();
    List<BucketState> claimed = restarted.claimBuckets("fast", RELAY, buckets, LEASE);
    List<BucketRead> reads = claimed.stream().map(s -> new BucketRead(s.bucket(), s.checkpoint(), 100)).toList();
    List<String> read = await().atMost(WAIT).until(() -> restarted.read("fast", reads).stream()
        .map(m -> body(m)).toList(), r -> r.size() >= 3);
    assertThat(read).containsExactlyInAnyOrder("40", "41", "42");
    restarted.leave("fast", RELAY);
  }

  private Janitor janitor(Duration retention, int batchSize) {
    return Janitor.builder(janitorStore).outboxRetention(retention).batchSize(batchSize).build();
  }

  /** Events numbered {@code first} to {@code first + count - 1}, one per transaction. */
  private void write(int first, int count, Instant createdAt) {
    write(first, count, createdAt, 1);
  }

  /** Events numbered {@code first} to {@code first + count - 1}, {@code perTransaction} at a time. */
  private void write(int first, int count, Instant createdAt, int perTransaction) {
    List<Message> batch = new ArrayList<>();
    for (int i = first; i < first + count; i++) {
      batch.add(Message.builder().type("T").destination("d").key("k" + i)
          .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).createdAt(createdAt).build());
      if (batch.size() == perTransaction || i == first + count - 1) {
        try {
          appendCommitted(batch);
        } catch (Exception e) {
          throw new IllegalStateException("could not append", e);
        }
        appended.addAndGet(batch.size());
        batch = new ArrayList<>();
      }
    }
  }

  /**
   * Relays as {@code subscription}, through the store's own relay methods, every event numbered
   * below {@code upTo}: in each bucket, the events before the first numbered {@code upTo} or more.
   */
  private void relay(String subscription, int upTo) {
    List<BucketState> claimed = store.claimBuckets(subscription, RELAY, buckets, LEASE);
    assertThat(claimed).as("buckets of " + subscription).hasSize(buckets);
    List<BucketRead> reads = claimed.stream()
        .map(s -> new BucketRead(s.bucket(), s.checkpoint(), 100_000)).toList();
    long expected = appended.get();
    // A store may hold a committed event back while an older transaction could still commit before it.
    List<StoredMessage> all = await().atMost(WAIT).until(() -> store.read(subscription, reads),
        r -> r.size() >= expected);
    List<BucketProgress> progress = new ArrayList<>();
    for (BucketState state : claimed) {
      Checkpoint last = null;
      for (StoredMessage m : all) {
        if (m.bucket() != state.bucket()) {
          continue;
        }
        if (Integer.parseInt(body(m)) >= upTo) {
          break;
        }
        last = m.checkpoint();
      }
      if (last != null) {
        progress.add(new BucketProgress(state.bucket(), last, 0, null, null));
      }
    }
    assertThat(store.saveProgress(subscription, RELAY, progress, List.of())).as("buckets lost").isEmpty();
    store.leave(subscription, RELAY);
  }

  private void appendCommitted(List<Message> messages) throws SQLException {
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      store.append(c, messages);
      c.commit();
    }
  }

  private static String body(StoredMessage m) {
    return new String(m.message().payload(), StandardCharsets.UTF_8);
  }
}
