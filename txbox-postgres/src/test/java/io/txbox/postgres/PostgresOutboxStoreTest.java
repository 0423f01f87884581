package io.txbox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.TxboxException;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.StoreStatus;
import io.txbox.postgres.PostgresTables;
import io.txbox.postgres.internal.PostgresMigration;
import io.txbox.postgres.internal.PostgresSql;
import io.txbox.spi.BucketRead;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.StoredMessage;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PostgresOutboxStoreTest {
  private static final int BUCKETS = 8;
  private TestDatabase db;
  private PostgresOutboxStore store;
  private Outbox outbox;

  @BeforeEach
  void createSchema() {
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(BUCKETS).build();
    store.migrate();
    outbox = Outbox.create(store.writer());
  }

  @AfterEach
  void dropSchema() {
    db.close();
  }

  @Test
  void migrationIsSafeToRunTwiceAndFromSeveralInstancesAtOnce() throws Exception {
    PostgresOutboxStore fresh = PostgresOutboxStore.builder(db.dataSource())
        .schema(db.schema()).tablePrefix("again_").buckets(BUCKETS).build();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Integer>> runs = pool.invokeAll(
          IntStream.range(0, 4).mapToObj(i -> (Callable<Integer>) fresh::migrate).toList());
      int applied = 0;
      for (Future<Integer> run : runs) {
        applied += run.get();
      }
      assertThat(applied).isEqualTo(PostgresMigration.latestVersion());
    } finally {
      pool.shutdown();
    }
    assertThat(fresh.migrate()).isZero();
  }

  @Test
  void migrationScriptsRunByHandAsFlywayWouldLeaveNothingForMigrateToDo() throws SQLException {
    PostgresOutboxStore byHand = PostgresOutboxStore.builder(db.dataSource())
        .schema(db.schema()).tablePrefix("flyway_").buckets(BUCKETS).build();
    List<MigrationScript> scripts = byHand.operator().migrationScripts();
    assertThat(scripts).extracting(MigrationScript::version).containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    assertThat(scripts.get(0).sql()).contains("CREATE TABLE " + db.schema() + ".flyway_outbox")
        .doesNotContain("{schema}", "{prefix}", "{buckets}");
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      for (MigrationScript script : scripts) {
        s.execute(script.sql());
      }
    }
    assertThat(byHand.migrate()).as("every version recorded as applied").isZero();
    assertThat(byHand.relay().openSubscription("s")).isEqualTo(BUCKETS);
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      Outbox.create(byHand.writer()).send(c, message("k", 1));
      c.commit();
    }
    assertThat(byHand.relay().backlog("s", 10)).hasValueSatisfying(b -> assertThat(b.pending()).isEqualTo(1));
  }

  @Test
  void migrationRefusesADifferentBucketCount() {
    PostgresOutboxStore other = PostgresOutboxStore.builder(db.dataSource())
        .schema(db.schema()).buckets(BUCKETS * 2).build();
    assertThatThrownBy(other::migrate)
        .isInstanceOf(TxboxException.class)
        .hasMessageContaining("buckets is 16 but the outbox")
        .hasMessageContaining("set buckets to 8");
  }

  @Test
  void aWrongTablePrefixFailsWithAMessageNamingTheSetting() {
    PostgresOutboxStore wrong = PostgresOutboxStore.builder(db.dataSource())
        .schema(db.schema()).tablePrefix("nope_").build();
    assertThatThrownBy(() -> wrong.relay().openSubscription("default"))
        .isInstanceOf(TxboxException.class)
        .hasMessageContaining("nope_outbox does not exist")
        .hasMessageContaining("tablePrefix ('nope_')");
  }

  @Test
  void namesThatCouldInjectSqlAreRefused() {
    assertThatThrownBy(() -> PostgresOutboxStore.builder(db.dataSource()).schema("public; drop table x").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("schema must match");
    assertThatThrownBy(() -> PostgresOutboxStore.builder(db.dataSource()).tablePrefix("a\"b").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("tablePrefix must match");
  }

  @Test
  void sendRefusesAConnectionInAutoCommitMode() throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(true);
      assertThatThrownBy(() -> outbox.send(c, message("k", 1)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("setAutoCommit(false)");
    }
  }

  @Test
  void aRolledBackTransactionAppendsNothing() throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.send(c, message("k", 1));
      c.rollback();
    }
    assertThat(readAll()).isEmpty();
  }

  @Test
  void committedEventsComeBackWholeAndInOrderPerKey() throws SQLException {
    Message withHeaders = Message.builder().type("OrderPlaced").version(3).key("order-1")
        .destination("orders").payload("{}".getBytes(StandardCharsets.UTF_8), "application/json")
        .header("traceparent", "00-abc-def-01").header("tenant", "ü \"quoted\"").build();
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.send(c, List.of(withHeaders, message("order-1", 2), message("order-1", 3)));
      c.commit();
    }
    List<StoredMessage> rows = readAll();
    assertThat(rows).extracting(StoredMessage::message).first().isEqualTo(withHeaders);
    assertThat(rows).extracting(r -> r.message().id())
        .containsExactly(withHeaders.id(), rows.get(1).message().id(), rows.get(2).message().id());
    assertThat(rows).extracting(r -> new String(r.message().payload(), StandardCharsets.UTF_8))
        .containsExactly("{}", "2", "3");
  }

  @Test
  void anOpenTransactionHoldsBackLaterCommitsUntilItEnds() throws SQLException {
    try (Connection early = db.dataSource().getConnection()) {
      early.setAutoCommit(false);
      outbox.send(early, message("a", 1)); // takes its position first, commits last
      send(message("b", 2));
      assertThat(readAll()).as("nothing is read past the open transaction").isEmpty();
      early.commit();
    }
    assertThat(readAll()).extracting(r -> r.message().key()).containsExactlyInAnyOrder("a", "b");
  }

  @Test
  void aTransactionOpenInAnotherDatabaseOfTheClusterHoldsNothingBack() throws SQLException {
    try (Connection elsewhere = otherDatabase()) {
      elsewhere.setAutoCommit(false);
      holdTransactionId(elsewhere); // open before the event, so below every later snapshot's xmin
      send(message("a", 1));
      assertThat(readAll()).as("an event committed while another database's write transaction is open")
          .extracting(r -> r.message().key()).containsExactly("a");
      assertThat(store.relay().oldestOpenTransaction()).as("not this database's: it holds nothing back").isEmpty();
      elsewhere.rollback();
    }
  }

  @Test
  void aSessionIdleInTransactionInAnotherDatabaseHoldsNothingBackWhileOneHereDoes() throws Exception {
    try (Connection elsewhere = otherDatabase(); Connection here = db.dataSource().getConnection()) {
      elsewhere.setAutoCommit(false);
      holdTransactionId(elsewhere); // then left idle in transaction, as a forgotten psql session
      send(message("a", 1));
      here.setAutoCommit(false);
      holdTransactionId(here); // a transaction of the outbox's own database, which wrote no event
      send(message("b", 2));
      assertThat(readAll()).as("the other database's session is passed over; this database's is not")
          .extracting(r -> r.message().key()).containsExactly("a");
      here.rollback();
      assertThat(readAll()).extracting(r -> r.message().key()).containsExactlyInAnyOrder("a", "b");
      elsewhere.rollback();
    }
  }

  @Test
  void lateCommitsAreStillReadWhileAnotherDatabaseKeepsItsTransactionsOpenUnderLoad() throws Exception {
    int writers = 4;
    int perWriter = 150;
    ExecutorService pool = Executors.newFixedThreadPool(writers + 1);
    try (Connection elsewhere = otherDatabase()) {
      elsewhere.setAutoCommit(false);
      holdTransactionId(elsewhere);
      List<Future<?>> running = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        int writer = w;
        running.add(pool.submit(() -> {
          for (int i = 0; i < perWriter; i++) {
            try (Connection c = db.dataSource().getConnection()) {
              c.setAutoCommit(false);
              outbox.send(c, message("w" + writer + "-" + (i % 7), i));
              if (i % 25 == 0) {
                Thread.sleep(20); // commits late, after writers that began later
              }
              c.commit();
            }
          }
          return null;
        }));
      }
      // Reads as the relay does, from where the last read ended, while the writers commit.
      java.util.Map<Integer, Checkpoint> from = new java.util.HashMap<>();
      java.util.Set<java.util.UUID> seen = new java.util.HashSet<>();
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
      while (seen.size() < writers * perWriter && System.nanoTime() < deadline) {
        List<BucketRead> reads = new ArrayList<>();
        for (int b = 0; b < BUCKETS; b++) {
          reads.add(new BucketRead(b, from.getOrDefault(b, Checkpoint.START), 50));
        }
        for (StoredMessage m : store.relay().read("test", reads)) {
          assertThat(seen.add(m.message().id())).as("each event read once").isTrue();
          from.put(m.bucket(), m.checkpoint());
        }
      }
      for (Future<?> f : running) {
        f.get();
      }
      assertThat(seen).as("every event, the late commits too").hasSize(writers * perWriter);
      elsewhere.rollback();
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void theTransactionHoldingTheHorizonBackIsNamedWithItsPidAndAge() throws Exception {
    try (Connection open = db.dataSource().getConnection()) {
      open.setAutoCommit(false);
      outbox.send(open, message("held", 1)); // the write gives it a transaction id
      int pid;
      try (Statement s = open.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        pid = rs.getInt(1);
      }
      Thread.sleep(50);
      assertThat(store.relay().oldestOpenTransaction()).hasValueSatisfying(tx -> {
        assertThat(tx.pid()).isEqualTo(pid);
        assertThat(tx.age()).isGreaterThanOrEqualTo(java.time.Duration.ofMillis(50));
        assertThat(tx.state()).isEqualTo("idle in transaction");
        assertThat(tx.description()).contains("idle in transaction").doesNotContain("SELECT");
        assertThat(tx.query()).contains("SELECT pg_backend_pid()");
      });
      open.rollback();
    }
  }

  @Test
  void theBatchReadIsAnIndexRangeScanFromTheCheckpointUnderAGenericPlan() throws SQLException {
    for (int i = 0; i < 50; i++) {
      send(message("key-" + i, i));
    }
    String read = PostgresSql.of(new PostgresTables(db.schema(), "txbox_")).read();
    String plan;
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("SET plan_cache_mode = force_generic_plan");
      s.execute("PREPARE batch_read AS " + numbered(read));
      StringBuilder text = new StringBuilder();
      try (ResultSet rs = s.executeQuery(
          "EXPLAIN EXECUTE batch_read('{0,1,2}', '{0,0,0}', '{0,0,0}', '{10,10,10}')")) {
        while (rs.next()) {
          text.append(rs.getString(1)).append('\n');
        }
      }
      plan = text.toString();
    }
    assertThat(plan)
        .contains("Index Scan using txbox_outbox_pkey")
        .containsPattern("Index Cond: \\(\\(bucket = c.bucket\\) AND \\(ROW\\(tx_id, \"position\"\\) > ROW\\(")
        .doesNotContain("Seq Scan on txbox_outbox")
        .doesNotContain("Sort");
  }

  @Test
  void sendWithoutAConnectionJoinsTheCurrentTransaction() throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      Outbox.builder(store.writer()).currentTransaction(() -> c).build().send(message("joined", 1));
      assertThat(readAll()).as("not visible before the caller commits").isEmpty();
      c.commit();
    }
    assertThat(readAll()).extracting(r -> r.message().key()).containsExactly("joined");
  }

  @Test
  void outgoingHeadersAreAddedToEveryMessageAndTheCallersOwnHeadersWin() throws SQLException {
    Outbox traced = Outbox.builder(store.writer())
        .headers(() -> java.util.Map.of("traceparent", "00-from-the-thread-01", "baggage", "tenant=7"))
        .build();
    Message own = Message.builder().type("T").key("own").destination("t").payload(new byte[0])
        .header("traceparent", "00-set-by-the-caller-01").build();
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      traced.send(c, List.of(message("plain", 1), own));
      c.commit();
    }
    assertThat(readAll()).extracting(r -> r.message().key() + " " + r.message().headers().get("traceparent")
            + " " + r.message().headers().get("baggage"))
        .containsExactlyInAnyOrder("plain 00-from-the-thread-01 tenant=7", "own 00-set-by-the-caller-01 tenant=7");
  }

  @Test
  void sendWithoutAConnectionOrACurrentTransactionSaysHowToGiveOne() {
    assertThatThrownBy(() -> outbox.send(message("k", 1)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("send(connection, message)")
        .hasMessageContaining("Outbox.builder(store).currentTransaction(...)");
  }

  @Test
  void theBacklogCountsCommittedEventsNotYetRelayedAndStopsCountingAtTheLimit() throws SQLException {
    store.relay().openSubscription("test");
    assertThat(store.relay().backlog("test", 100)).hasValueSatisfying(b -> {
      assertThat(b.pending()).isZero();
      assertThat(b.oldestCreatedAt()).isEmpty();
    });
    for (int i = 0; i < 40; i++) {
      send(message("key-" + i, i));
    }
    try (Connection open = db.dataSource().getConnection()) {
      open.setAutoCommit(false);
      outbox.send(open, message("uncommitted", 0));
      assertThat(store.relay().backlog("test", 100)).hasValueSatisfying(b -> {
        assertThat(b.pending()).isEqualTo(40);
        assertThat(b.capped()).isFalse();
        assertThat(b.oldestCreatedAt()).isPresent();
      });
      open.rollback();
    }
    assertThat(store.relay().backlog("test", 1)).hasValueSatisfying(b -> {
      assertThat(b.pending()).isLessThanOrEqualTo(BUCKETS);
      assertThat(b.capped()).isTrue();
    });
  }

  @Test
  void theBacklogCountIsAnIndexRangeScanFromTheCheckpoint() throws SQLException {
    store.relay().openSubscription("test");
    for (int i = 0; i < 50; i++) {
      send(message("key-" + i, i));
    }
    String backlog = PostgresSql.of(new PostgresTables(db.schema(), "txbox_")).backlog();
    StringBuilder plan = new StringBuilder();
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("SET plan_cache_mode = force_generic_plan");
      s.execute("PREPARE backlog AS " + numbered(backlog));
      try (ResultSet rs = s.executeQuery("EXPLAIN EXECUTE backlog(1000, 'test', 'test', 1000)")) {
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
      }
    }
    assertThat(plan.toString())
        .contains("Index Scan using txbox_outbox_pkey")
        .containsPattern("Index Cond: \\(\\(bucket = [a-z_]+\\.bucket\\) AND \\(ROW\\(tx_id, \"position\"\\) > ROW\\(")
        .doesNotContain("Seq Scan on txbox_outbox");
  }

  @Test
  void eventsWaitingForARelayThatNeverStartedArePendingAndMakeTheStatusDegraded() throws SQLException {
    for (int i = 0; i < 5; i++) {
      send(message("key-" + i, i));
    }
    assertThat(store.relay().backlog("never-opened", 1000)).hasValueSatisfying(b -> {
      assertThat(b.pending()).isEqualTo(5);
      assertThat(b.oldestCreatedAt()).isPresent();
    });
    StoreStatus status = store.operator().status(1000);
    assertThat(status.subscriptions()).isEmpty();
    assertThat(status.problems(java.time.Duration.ofMinutes(5))).singleElement().asString()
        .contains("5 events wait in the outbox and no relay has ever started");
    store.relay().openSubscription("default");
    assertThat(store.operator().status(1000).waitingForFirstRelay()).isEmpty();
  }

  @Test
  void aBucketWhoseLeaseIsRenewedWhileItsEventsWaitUnmovedMakesTheStatusDegraded() throws Exception {
    store.relay().openSubscription("default");
    send(message("stuck", 1));
    int bucket = readAll().get(0).bucket();
    long minutesAgo = StoreStatus.NOT_MOVING_AFTER.toMinutes() + 1;
    // A live lease whose holder never moves its checkpoint: renewed, never relaying.
    db.execute("UPDATE {s}.txbox_subscription SET owner = 'relay-0/5e1f', lease_until = now() + interval '1 hour',"
        + " updated_at = now() - interval '" + minutesAgo + " minutes' WHERE subscription = 'default'");
    db.execute("UPDATE {s}.txbox_outbox SET created_at = now() - interval '" + minutesAgo + " minutes'");
    StoreStatus status = store.operator().status(1000);
    assertThat(status.idleBuckets()).singleElement().satisfies(b -> {
      assertThat(b.bucket()).isEqualTo(bucket);
      assertThat(b.owner()).isEqualTo("relay-0/5e1f");
    });
    assertThat(status.problems(java.time.Duration.ofDays(1))).singleElement().asString()
        .contains("subscription default: bucket(s) " + bucket + " have had events waiting", "restart that relay")
        .doesNotContain("relay-0/5e1f");

    db.execute("UPDATE {s}.txbox_subscription SET updated_at = now()"); // it moved: not idle
    assertThat(store.operator().status(1000).idleBuckets()).isEmpty();
  }

  @Test
  void aBucketWaitingForAnOpenTransactionOrADelayedEventIsNotCountedIdle() throws Exception {
    store.relay().openSubscription("default");
    db.execute("UPDATE {s}.txbox_subscription SET owner = 'relay-0', lease_until = now() + interval '1 hour',"
        + " updated_at = now() - interval '1 hour'");
    try (Connection open = db.dataSource().getConnection()) {
      open.setAutoCommit(false);
      holdTransactionId(open); // begun before the event: it holds the event back, rightly
      send(message("held", 1));
      send(Message.builder().type("Test").key("later").destination("t").payload(new byte[] {1})
          .delay(java.time.Duration.ofHours(1)).build());
      db.execute("UPDATE {s}.txbox_outbox SET created_at = now() - interval '1 hour'");
      assertThat(store.operator().status(1000).idleBuckets()).as("held back by a transaction of this database").isEmpty();
      open.rollback();
    }
    assertThat(store.operator().status(1000).idleBuckets()).as("one now due, one delayed")
        .extracting(StoreStatus.IdleBucket::bucket).hasSize(1);
  }

  private static String numbered(String sql) {
    StringBuilder out = new StringBuilder();
    int n = 0;
    for (char ch : sql.toCharArray()) {
      out.append(ch == '?' ? "$" + (++n) : String.valueOf(ch));
    }
    return out.toString();
  }

  /** A connection to another database of the same server: the first one this user may connect to. */
  private Connection otherDatabase() throws SQLException {
    String other;
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT datname FROM pg_database WHERE datallowconn"
            + " AND datname <> current_database() ORDER BY datistemplate, datname LIMIT 1")) {
      rs.next();
      other = rs.getString(1);
    }
    String url = TestDatabase.jdbcUrl().replaceFirst("(jdbc:postgresql://[^/]*/)[^?]*", "$1" + other);
    return java.sql.DriverManager.getConnection(url);
  }

  /** Gives the connection's open transaction an id, as its first write would. */
  private static void holdTransactionId(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("SELECT pg_current_xact_id()");
    }
  }

  private void send(Message m) throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.send(c, m);
      c.commit();
    }
  }

  private List<StoredMessage> readAll() {
    List<BucketRead> reads = new ArrayList<>();
    for (int b = 0; b < BUCKETS; b++) {
      reads.add(new BucketRead(b, Checkpoint.START, 1000));
    }
    return store.relay().read("test", reads);
  }

  static Message message(String key, int n) {
    return Message.builder().type("Test").key(key).destination("t")
        .payload(Integer.toString(n).getBytes(StandardCharsets.UTF_8)).build();
  }
}
