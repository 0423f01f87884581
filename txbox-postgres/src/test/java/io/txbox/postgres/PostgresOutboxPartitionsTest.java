package io.txbox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.jdbc.StoreStatus;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PostgresOutboxPartitionsTest {
  private static final long SIZE = PostgresOutboxStore.MIN_PARTITION_SIZE;
  private final Set<UUID> published = ConcurrentHashMap.newKeySet();
  private TestDatabase db;
  private Relay relay;

  @BeforeEach
  void createSchema() {
    db = TestDatabase.create();
  }

  @AfterEach
  void dropSchema() {
    if (relay != null) {
      relay.close();
    }
    db.close();
  }

  private PostgresOutboxStore store(long partitionSize, int ahead) {
    // A lock timeout long enough that a relay's read in flight on a loaded machine never makes a
    // drop wait for the next run; the open transaction of one test holds it for good.
    PostgresOutboxStore store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(4)
        .outboxPartitionSize(partitionSize).partitionsAhead(ahead).partitionLockTimeout(Duration.ofSeconds(1))
        .build();
    store.migrate();
    return store;
  }

  /** Appends {@code count} rows with plain SQL, one transaction each {@code perTransaction}. */
  private void write(int count, int perTransaction) throws SQLException {
    for (int done = 0; done < count; done += perTransaction) {
      execute("INSERT INTO {s}.txbox_outbox (key, type, destination, payload)"
          + " SELECT 'k' || (g % 16), 'T', 'd', '\\x01' FROM generate_series(1, "
          + Math.min(perTransaction, count - done) + ") g");
    }
  }

  private long query(String sql) throws SQLException {
    return db.queryLong(sql);
  }

  private void execute(String sql) throws SQLException {
    db.execute(sql);
  }

  private void startRelay(PostgresOutboxStore store) {
    relay = Relay.builder(store.relay(), new Publisher() {
      @Override
      public PublishResult publish(List<Message> batch) {
        batch.forEach(m -> published.add(m.id()));
        return PublishResult.allAcknowledged(batch.size());
      }

      @Override
      public void close() {}
    }).heartbeatInterval(Duration.ofMillis(100)).idleInterval(Duration.ofMillis(20)).build().start();
  }

  private void awaitAllPublished() {
    await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
        assertThat(published).hasSize((int) query("SELECT count(*) FROM {s}.txbox_outbox")));
  }

  private static Janitor janitor(PostgresOutboxStore store) {
    return Janitor.builder(store.janitor()).outboxRetention(Duration.ZERO).build();
  }

  @Test
  void migrateTurnsAnOutboxHoldingRowsIntoPartitionsAndKeepsEveryRowAndRule() throws SQLException {
    PostgresOutboxStore plain = store(0, 2);
    write(50, 50);
    assertThat(plain.operator().status(10).outboxPartitions()).isEmpty();
    long before = query("SELECT sum(position) FROM {s}.txbox_outbox");

    PostgresOutboxStore store = store(SIZE, 2);
    store.migrate(); // twice: nothing more to do

    assertThat(plain.outboxPartitions()).as("the plain store sees the partitions too")
        .containsExactly("txbox_outbox_p0", "txbox_outbox_p51", "txbox_outbox_p1051", "txbox_outbox_default");
    assertThat(query("SELECT sum(position) FROM {s}.txbox_outbox")).isEqualTo(before);
    write(1, 1);
    assertThat(query("SELECT position FROM {s}.txbox_outbox_p51")).as("the identity continues").isEqualTo(51);
    assertThatThrownBy(() -> execute("INSERT INTO {s}.txbox_outbox (type, destination, payload) VALUES (' ', 'd', '')"))
        .hasMessageContaining("txbox_outbox_type_valid");
  }

  @Test
  void aPartitionWithARowOfAnOpenTransactionStaysThoughEveryRowItShowsWasRelayed() throws Exception {
    PostgresOutboxStore store = store(SIZE, 2);
    startRelay(store);
    write(999, 111);
    awaitAllPublished();
    try (Connection open = db.dataSource().getConnection()) {
      open.setAutoCommit(false);
      try (Statement s = open.createStatement()) {
        s.execute("INSERT INTO " + db.schema() + ".txbox_outbox (key, type, destination, payload)"
            + " VALUES ('held', 'T', 'd', '\\x01')"); // position 1000, the last of partition p1
      }
      write(1_500, 100); // the sequence moves past p1

      Janitor.Cleanup whileOpen = janitor(store).runOnce();

      assertThat(whileOpen.outboxEvents()).isZero();
      assertThat(store.outboxPartitions()).contains("txbox_outbox_p1");
      open.commit();
    }
    awaitAllPublished();
    assertThat(published).hasSize(2_500);

    Janitor.Cleanup done = janitor(store).runOnce();

    assertThat(done.outboxEvents()).as("two partitions and the default's rows").isEqualTo(2_500);
    assertThat(store.outboxPartitions()).containsExactly(
        "txbox_outbox_p2601", "txbox_outbox_p3601", "txbox_outbox_default");
    assertThat(query("SELECT count(*) FROM {s}.txbox_outbox")).isZero();
  }

  @Test
  void aRowThatComesForADroppedRangeLandsInTheDefaultPartitionAndIsRelayed() throws Exception {
    PostgresOutboxStore store = store(SIZE, 2);
    startRelay(store);
    write(1_500, 500);
    awaitAllPublished();
    janitor(store).runOnce();
    assertThat(store.outboxPartitions()).doesNotContain("txbox_outbox_p1");

    // What a sequence with a CACHE above 1 could do: a position of the dropped range, late.
    execute("INSERT INTO {s}.txbox_outbox (position, key, type, destination, payload) OVERRIDING SYSTEM VALUE"
        + " VALUES (7, 'late', 'T', 'd', '\\x01')");

    assertThat(query("SELECT count(*) FROM {s}.txbox_outbox_default WHERE position = 7")).isOne();
    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(published).hasSize(1_501));
  }

  @Test
  void aPartitionNotYetRelayedByEverySubscriptionStays() throws SQLException {
    PostgresOutboxStore store = store(SIZE, 1);
    store.relay().openSubscription("never-ran");
    write(1_500, 500);

    assertThat(janitor(store).runOnce().outboxEvents()).isZero();
    assertThat(query("SELECT count(*) FROM {s}.txbox_outbox")).isEqualTo(1_500);
    assertThat(store.outboxPartitions()).contains("txbox_outbox_p1");
  }

  @Test
  void rowsWrittenPastThePartitionsAheadLandInTheDefaultPartitionAndAreRelayedAndDeleted() throws Exception {
    PostgresOutboxStore store = store(SIZE, 1);
    write(3_500, 500); // partitions cover positions 1 to 1000; 1001 to 3500 go to the default
    assertThat(query("SELECT count(*) FROM {s}.txbox_outbox_default")).isEqualTo(2_500);
    StoreStatus behind = store.operator().status(10);
    assertThat(behind.outboxPartitions()).contains(new StoreStatus.OutboxPartitions(2, 0, 2_500));
    assertThat(behind.problems(Duration.ofDays(1))).anyMatch(p -> p.startsWith("2500 rows in the outbox's default partition"));
    startRelay(store);
    awaitAllPublished();
    // Published is not yet checkpointed: the relay saves the last batch's checkpoints after the
    // publisher returns, and the janitor deletes only what every checkpoint has passed.
    await().atMost(Duration.ofSeconds(30)).until(() -> store.relay().backlog(Relay.DEFAULT_SUBSCRIPTION, 10)
        .map(b -> b.pending() == 0).orElse(false));

    janitor(store).runOnce();

    assertThat(published).as("nothing was lost").hasSize(3_500);
    assertThat(query("SELECT count(*) FROM {s}.txbox_outbox")).isZero();
    assertThat(store.operator().status(10).outboxPartitions()).contains(new StoreStatus.OutboxPartitions(1, 1, 0));
    List<String> partitions = store.outboxPartitions();
    assertThat(partitions).as("a partition begins a tenth of a partition past the writers")
        .containsExactly("txbox_outbox_p3601", "txbox_outbox_default");
    write(1_000, 1_000);
    assertThat(query("SELECT count(*) FROM {s}.txbox_outbox_default")).isEqualTo(100);
    assertThat(query("SELECT count(*) FROM {s}.txbox_outbox_p3601")).isEqualTo(900);
  }
}
