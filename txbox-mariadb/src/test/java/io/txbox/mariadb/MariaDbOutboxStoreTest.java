package io.txbox.mariadb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.TxboxException;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.StoredMessage;
import io.txbox.testkit.TestMariaDb;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The MariaDB store's own promises, beyond the contract: above all, reading commits safely. */
class MariaDbOutboxStoreTest {
  private static final int BUCKETS = 4;
  private TestMariaDb db;
  private MariaDbOutboxStore store;
  private Outbox outbox;

  @BeforeEach
  void createDatabase() {
    db = TestMariaDb.create();
    store = MariaDbOutboxStore.builder(db.dataSource()).buckets(BUCKETS).build();
    store.migrate();
    store.relay().openSubscription("s");
    outbox = Outbox.create(store.writer());
  }

  @AfterEach
  void dropDatabase() {
    db.close();
  }

  @Test
  void anOpenTransactionThatWroteAnEventHoldsBackLaterCommitsUntilItEnds() throws SQLException {
    try (Connection late = db.dataSource().getConnection()) {
      late.setAutoCommit(false);
      outbox.send(late, message("k", "first")); // takes its position now, commits last
      send(message("k", "second"));
      send(message("other", "third"));

      assertThat(readAll()).as("nothing past the open transaction's position").isEmpty();
      assertThat(readAll()).as("nor on the next round").isEmpty();

      late.commit();
    }
    assertThat(bodies(readAll())).containsExactlyInAnyOrder("first", "second", "third");
    assertThat(bodies(readAll().stream().filter(m -> "k".equals(m.message().key())).toList()))
        .containsExactly("first", "second");
  }

  @Test
  void transactionsThatWroteNoEventHoldNothingBack() throws SQLException {
    db.execute("CREATE TABLE business (id INT PRIMARY KEY) ENGINE = InnoDB");
    try (Connection writer = db.dataSource().getConnection(); Connection reader = db.dataSource().getConnection()) {
      writer.setAutoCommit(false);
      writer.createStatement().execute("INSERT INTO business VALUES (1)");
      reader.setAutoCommit(false);
      reader.createStatement().executeQuery("SELECT COUNT(*) FROM business").close();
      send(message("k", "one"));

      assertThat(bodies(readAll())).containsExactly("one");
      writer.rollback();
      reader.rollback();
    }
  }

  @Test
  void aRolledBackEventLeavesAGapThatHoldsNothingBack() throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.send(c, message("k", "rolled back"));
      c.rollback();
    }
    send(message("k", "kept"));

    assertThat(bodies(readAll())).containsExactly("kept");
  }

  @Test
  void aRepeatableReadWriterWhoseSnapshotPredatesNewerEpochsStillHoldsTheHorizonBack() throws SQLException {
    try (Connection late = db.dataSource().getConnection()) {
      late.setAutoCommit(false);
      late.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      late.createStatement().executeQuery("SELECT COUNT(*) FROM txbox_writer_epoch").close(); // snapshot now
      for (int i = 0; i < 3; i++) { // the relay opens and seals epochs the snapshot never sees
        send(message("x", "x" + i));
        readAll();
      }
      outbox.send(late, message("k", "late"));
      send(message("k", "after"));

      assertThat(bodies(readAll())).containsExactly("x0", "x1", "x2");
      late.commit();
    }
    assertThat(bodies(readAll())).containsExactly("x0", "x1", "x2", "late", "after");
  }

  @Test
  void aPlainSqlWriterGetsTheSameBucketAndHoldsTheHorizonBackToo() throws SQLException {
    send(message("shared-key", "from java"));
    try (Connection plain = db.dataSource().getConnection()) {
      plain.setAutoCommit(false);
      try (Statement s = plain.createStatement()) {
        s.executeUpdate("INSERT INTO txbox_outbox (`key`, type, destination, payload)"
            + " VALUES ('shared-key', 'Plain', 'd', 'from sql')");
      }
      send(message("z", "later"));
      assertThat(bodies(readAll())).containsExactly("from java");
      plain.commit();
    }
    List<StoredMessage> all = readAll();
    assertThat(all.stream().filter(m -> "shared-key".equals(m.message().key())).map(StoredMessage::bucket).distinct())
        .hasSize(1);
    assertThat(bodies(all)).containsExactlyInAnyOrder("from java", "from sql", "later");
  }

  @Test
  void manyConcurrentWritersSomeRollingBackLoseNothingToARelayReadingAllAlong() throws Exception {
    int writers = 8;
    int perWriter = 150;
    List<StoredMessage> read = new ArrayList<>();
    Checkpoint[] after = new Checkpoint[BUCKETS];
    java.util.Arrays.fill(after, Checkpoint.START);
    CompletableFuture<?>[] running = IntStream.range(0, writers).mapToObj(w -> CompletableFuture.runAsync(() -> {
      for (int i = 0; i < perWriter; i++) {
        try (Connection c = db.dataSource().getConnection()) {
          c.setAutoCommit(false);
          outbox.send(c, message("w" + w, (i % 10 == 9 ? "rollback-" : "") + w + "-" + i));
          if (i % 10 == 9) {
            c.rollback();
          } else {
            c.commit();
          }
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      }
    })).toArray(CompletableFuture[]::new);
    CompletableFuture<Void> all = CompletableFuture.allOf(running);
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
    while ((!all.isDone() || read.size() < writers * perWriter * 9 / 10) && System.nanoTime() < deadline) {
      List<BucketRead> reads = new ArrayList<>();
      for (int b = 0; b < BUCKETS; b++) {
        reads.add(new BucketRead(b, after[b], 50));
      }
      for (StoredMessage m : store.relay().read("s", reads)) { // the relay moves each checkpoint as it reads
        read.add(m);
        after[m.bucket()] = m.checkpoint();
      }
      if (all.isCompletedExceptionally()) {
        all.join();
      }
    }
    all.join();
    for (int w = 0; w < writers; w++) {
      String key = "w" + w;
      int writer = w;
      assertThat(bodies(read.stream().filter(m -> key.equals(m.message().key())).toList()))
          .as("every committed event of writer %d, once, in order", w)
          .containsExactlyElementsOf(IntStream.range(0, perWriter).filter(i -> i % 10 != 9)
              .mapToObj(i -> writer + "-" + i).toList());
    }
  }

  /**
   * Relays starting together beat, claim, save and give back on the same rows at once. InnoDB
   * answers a lock cycle by killing a transaction, and a relay whose first heartbeat dies so
   * exits: none of these calls may ever meet one.
   */
  @Test
  void instancesBeatingClaimingAndSavingAtOnceNeverDeadlock() throws Exception {
    MariaDbOutboxStore many = MariaDbOutboxStore.builder(db.dataSource()).tablePrefix("many_").buckets(64).build();
    many.migrate();
    many.relay().openSubscription("s");
    long until = System.nanoTime() + Duration.ofSeconds(4).toNanos();
    CompletableFuture<?>[] instances = IntStream.range(0, 4).mapToObj(i -> CompletableFuture.runAsync(() -> {
      String instance = "i-" + i;
      java.util.Random random = new java.util.Random(i);
      while (System.nanoTime() < until) {
        Set<Integer> owned = many.relay().heartbeat("s", instance, Duration.ofSeconds(2)).ownedBuckets();
        many.relay().claimBuckets("s", instance, 1 + random.nextInt(20), Duration.ofSeconds(2));
        List<BucketProgress> progress = new ArrayList<>();
        for (int bucket : owned) {
          progress.add(new BucketProgress(bucket, new Checkpoint(0, random.nextInt(1000)), 0, null, null));
        }
        java.util.Collections.shuffle(progress, random);
        many.relay().saveProgress("s", instance, progress, List.of());
        if (random.nextInt(4) == 0 && !owned.isEmpty()) {
          many.relay().releaseBuckets("s", instance, List.of(owned.iterator().next()));
        }
      }
    })).toArray(CompletableFuture[]::new);

    CompletableFuture.allOf(instances).get(60, java.util.concurrent.TimeUnit.SECONDS);
  }

  @Test
  void migrationIsSafeToRunTwiceAndRefusesADifferentBucketCount() {
    store.migrate();
    MariaDbOutboxStore other = MariaDbOutboxStore.builder(db.dataSource()).buckets(BUCKETS + 1).build();

    assertThatThrownBy(other::migrate).hasMessageContaining("buckets is 5").hasMessageContaining("buckets(4)");
  }

  @Test
  void theOutboxIdIsMadeByTheUpgradeToVersion4AndKeptByEveryLaterMigration() throws Exception {
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("DELETE FROM txbox_setting WHERE name = 'outbox_id'"); // as at version 3
      s.execute("UPDATE txbox_setting SET value = '3' WHERE name = 'schema_version'");
    }
    assertThat(store.relay().outboxId()).isEmpty();

    store.migrate();
    String id = store.relay().outboxId().orElseThrow();
    assertThat(UUID.fromString(id)).as("a UUID").isNotNull();
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("UPDATE txbox_setting SET value = '3' WHERE name = 'schema_version'");
    }
    store.migrate();
    assertThat(store.relay().outboxId()).as("made once").contains(id);
  }

  @Test
  void relayRowsMadeBeforeVersion5AreGivenNoFencesAndCountThemAfterTheUpgrade() throws Exception {
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("ALTER TABLE txbox_relay_instance DROP COLUMN fences, DROP COLUMN last_fenced_at"); // as at 4
      s.execute("UPDATE txbox_setting SET value = '4' WHERE name = 'schema_version'");
    }
    store.relay().heartbeat("default", "relay-1", Duration.ofSeconds(30));

    store.migrate();

    store.relay().recordFence("default", "relay-1");
    store.relay().recordFence("default", "relay-1");
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT fences, last_fenced_at IS NOT NULL FROM txbox_relay_instance"
            + " WHERE instance = 'relay-1'")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getInt(1)).isEqualTo(2);
      assertThat(rs.getBoolean(2)).isTrue();
    }
  }

  @Test
  void missingTablesAreExplainedAndABadPrefixIsRefusedByName() {
    MariaDbOutboxStore elsewhere = MariaDbOutboxStore.builder(db.dataSource()).tablePrefix("other_").build();

    assertThatThrownBy(() -> elsewhere.relay().openSubscription("s")).isInstanceOf(TxboxException.class)
        .hasMessageContaining("txbox's tables are missing").hasMessageContaining("tablePrefix ('other_')");
    assertThatThrownBy(() -> MariaDbOutboxStore.builder(db.dataSource()).tablePrefix("x; DROP TABLE y").build())
        .hasMessageContaining("tablePrefix must match");
  }

  @Test
  void theDatabaseRefusesARowThatBreaksTheMessageRulesNamingTheRule() {
    assertThatThrownBy(() -> db.execute("INSERT INTO txbox_outbox (type, destination, payload, headers)"
        + " VALUES ('T', 'd', 'x', '[1]')")).hasMessageContaining("txbox_outbox_headers_valid");
    assertThatThrownBy(() -> db.execute("INSERT INTO txbox_outbox (type, destination, payload)"
        + " VALUES (' ', 'd', 'x')")).hasMessageContaining("txbox_outbox_type_valid");
  }

  @Test
  void eventsCommittedInOrderAreReadWhileALaterWriterIsStillOpen() throws SQLException {
    send(message("a", "one"));
    send(message("a", "two"));
    try (Connection open = db.dataSource().getConnection()) {
      open.setAutoCommit(false);
      outbox.send(open, message("a", "three"));

      assertThat(bodies(readAll())).containsExactly("one", "two");
      open.rollback();
    }
  }

  @Test
  void aPositionChosenByAPlainSqlWriterIsRefusedWithTheFix() {
    assertThatThrownBy(() -> db.execute("INSERT INTO txbox_outbox (position, type, destination, payload)"
        + " VALUES (1000, 'T', 'd', 'x')")).hasMessageContaining("position is given by the database");
  }

  @Test
  void aRowWhoseIdIsNoUuidComesBackUnreadableAndTheRestFlows() throws SQLException {
    db.execute("INSERT INTO txbox_outbox (id, `key`, type, destination, payload) VALUES ('not-a-uuid', 'k', 'T', 'd', 'x')");
    send(message("k", "fine"));

    List<StoredMessage> all = readAll();

    assertThat(all).hasSize(2);
    assertThat(all.get(0).message()).isNull();
    assertThat(all.get(0).unreadable()).contains("not-a-uuid");
    assertThat(all.get(1).message().key()).isEqualTo("k");
  }

  @Test
  void theBacklogCountsWhatIsPastTheCheckpointsCappedPerBucket() throws SQLException {
    for (int i = 0; i < 12; i++) {
      send(message("k" + i, "e" + i));
    }
    assertThat(store.relay().backlog("s", 1000)).hasValueSatisfying(b -> {
      assertThat(b.pending()).isEqualTo(12);
      assertThat(b.capped()).isFalse();
      assertThat(b.oldestCreatedAt()).isPresent();
    });
    assertThat(store.relay().backlog("never-opened", 1000).orElseThrow().pending())
        .as("a subscription no relay opened starts at the beginning").isEqualTo(12);
    db.execute("UPDATE txbox_subscription s SET position = (SELECT COALESCE(MAX(position), 0) FROM txbox_outbox o"
        + " WHERE o.bucket = s.bucket) WHERE subscription = 's'");
    send(message("late", "after the checkpoints"));
    assertThat(store.relay().backlog("s", 1000).orElseThrow().pending()).isEqualTo(1);
    assertThat(store.relay().backlog("never-opened", 1).orElseThrow().capped()).isTrue();
  }

  @Test
  void theOldestOpenTransactionIsOneThatWroteNotOneThatOnlyRead() throws SQLException {
    try (Connection reader = db.dataSource().getConnection(); Connection writer = db.dataSource().getConnection()) {
      reader.setAutoCommit(false);
      reader.createStatement().executeQuery("SELECT COUNT(*) FROM txbox_outbox").close();
      assertThat(store.relay().oldestOpenTransaction()).as("a reader holds nothing back").isEmpty();

      writer.setAutoCommit(false);
      outbox.send(writer, message("k", "held"));
      long connectionId;
      try (Statement s = writer.createStatement(); java.sql.ResultSet rs = s.executeQuery("SELECT CONNECTION_ID()")) {
        rs.next();
        connectionId = rs.getLong(1);
      }
      // INNODB_TRX is a cache that InnoDB refreshes when it was not read for 100 ms
      await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(store.relay().oldestOpenTransaction())
          .hasValueSatisfying(tx -> {
            assertThat(tx.pid()).isEqualTo(connectionId);
            assertThat(tx.age().isNegative()).isFalse();
            assertThat(tx.database()).isEqualTo(db.database());
          }));
      writer.rollback();
      reader.rollback();
    }
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(store.relay().oldestOpenTransaction()).isEmpty());
  }

  private List<StoredMessage> readAll() {
    List<BucketRead> reads = new ArrayList<>();
    for (int b = 0; b < BUCKETS; b++) {
      reads.add(new BucketRead(b, Checkpoint.START, 10_000));
    }
    List<StoredMessage> all = new ArrayList<>(store.relay().read("s", reads));
    all.sort(java.util.Comparator.comparing(StoredMessage::checkpoint));
    return all;
  }

  private void send(Message m) throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.send(c, m);
      c.commit();
    }
  }

  private static List<String> bodies(List<StoredMessage> messages) {
    return messages.stream().map(m -> new String(m.message().payload(), StandardCharsets.UTF_8)).toList();
  }

  private static Message message(String key, String body) {
    return Message.builder().type("Test").key(key).destination("d").payload(body.getBytes(StandardCharsets.UTF_8))
        .build();
  }
}
