package io.txbox.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class LogicalRelayTest {
  private final KafkaBroker kafka = KafkaBroker.shared();
  private LogicalDatabase db;
  private String topic;

  enum WriteMode {
    TABLE, WAL_MESSAGES;

    Outbox outbox(LogicalDatabase db) {
      return this == TABLE ? db.tableOutbox() : db.walOutbox();
    }
  }

  @BeforeEach
  void setUp() {
    db = LogicalDatabase.fresh();
    topic = "cdc-" + UUID.randomUUID();
    kafka.createTopic(topic, 1);
  }

  @AfterEach
  void tearDown() {
    db.close();
  }

  @ParameterizedTest
  @EnumSource(WriteMode.class)
  void concurrentWritersOfOneKeyAreRelayedInCommitOrderWithoutAnyLock(WriteMode mode) throws Exception {
    Outbox outbox = mode.outbox(db);
    db.exec("CREATE TABLE " + db.schema + ".counter (id int PRIMARY KEY, n int NOT NULL)");
    db.exec("INSERT INTO " + db.schema + ".counter VALUES (1, 0)");
    int writers = 8;
    int each = 60;
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start()) {
      List<Future<?>> done = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        done.add(pool.submit(() -> {
          for (int i = 0; i < each; i++) {
            updateThenSend(outbox);
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
      List<TopicReader.Received> got = readAll(writers * each);
      List<Integer> order = new ArrayList<>();
      for (TopicReader.Received r : got) {
        order.add(Integer.parseInt(new String(r.value(), StandardCharsets.UTF_8)));
      }
      // The row lock makes commit order the order of n: relayed in commit order means ascending.
      assertThat(order).hasSize(writers * each).isSorted();
    } finally {
      pool.shutdownNow();
    }
  }

  /** The common pattern: update the aggregate's row first, then send its event. */
  private void updateThenSend(Outbox outbox) throws SQLException {
    try (Connection c = db.dataSource.getConnection()) {
      c.setAutoCommit(false);
      int n;
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("UPDATE " + db.schema + ".counter SET n = n + 1 WHERE id = 1 RETURNING n")) {
        rs.next();
        n = rs.getInt(1);
      }
      outbox.send(c, event("aggregate-1", Integer.toString(n)));
      c.commit();
    }
  }

  @ParameterizedTest
  @EnumSource(WriteMode.class)
  void transactionsHeldOpenHereAndInAnotherDatabaseHoldNothingBack(WriteMode mode) throws Exception {
    Outbox outbox = mode.outbox(db);
    db.exec("CREATE TABLE IF NOT EXISTS " + db.schema + ".scratch (n int)");
    createOtherDatabase();
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start();
        Connection held = db.dataSource.getConnection();
        Connection other = java.sql.DriverManager.getConnection(LogicalDatabase.jdbcUrl().replace("/postgres?", "/other?"),
            LogicalDatabase.credentials())) {
      held.setAutoCommit(false);
      outbox.send(held, event("held", "held-1"));
      other.setAutoCommit(false);
      try (Statement s = other.createStatement()) {
        s.execute("CREATE TABLE IF NOT EXISTS busy (n int)");
        s.execute("INSERT INTO busy VALUES (1)");
      }
      db.commit(outbox, event("a", "a-1"));
      db.commit(outbox, event("b", "b-1"), event("held", "held-2"));
      List<TopicReader.Received> meanwhile = readAll(3);
      assertThat(payloads(meanwhile)).containsExactly("a-1", "b-1", "held-2");

      outbox.send(held, event("held", "held-3"));
      held.commit();
      other.commit();
      // The held transaction committed last, so its events come last, in its own order.
      assertThat(payloads(readAll(5))).containsExactly("a-1", "b-1", "held-2", "held-1", "held-3");
    }
  }

  private void createOtherDatabase() {
    try (Connection c = java.sql.DriverManager.getConnection(LogicalDatabase.jdbcUrl(), LogicalDatabase.credentials());
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT 1 FROM pg_database WHERE datname = 'other'")) {
      if (!rs.next()) {
        s.execute("CREATE DATABASE other");
      }
    } catch (SQLException e) {
      if (!"42P04".equals(e.getSQLState())) {
        throw new IllegalStateException(e);
      }
    }
  }

  @ParameterizedTest
  @EnumSource(WriteMode.class)
  void eventsSentTogetherArriveInTheOrderSent(WriteMode mode) throws Exception {
    Outbox outbox = mode.outbox(db);
    List<Message> batch = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      batch.add(event(i % 2 == 0 ? "even" : "odd", Integer.toString(i)));
    }
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start();
        Connection c = db.dataSource.getConnection()) {
      c.setAutoCommit(false);
      outbox.send(c, batch); // one statement for the lot
      c.commit();
      List<String> expected = batch.stream().map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList();
      assertThat(payloads(readAll(50))).containsExactlyElementsOf(expected);
    }
  }

  @ParameterizedTest
  @EnumSource(WriteMode.class)
  void aRolledBackTransactionSendsNothing(WriteMode mode) throws Exception {
    Outbox outbox = mode.outbox(db);
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start();
        Connection c = db.dataSource.getConnection()) {
      c.setAutoCommit(false);
      outbox.send(c, event("k", "rolled-back"));
      c.rollback();
      db.commit(outbox, event("k", "committed"));
      assertThat(payloads(readAll(1))).containsExactly("committed");
      assertThat(payloads(readFor(Duration.ofSeconds(1)))).containsExactly("committed");
    }
  }

  @ParameterizedTest
  @EnumSource(WriteMode.class)
  void everyFieldOfAnEventArrivesAsItWasWritten(WriteMode mode) throws Exception {
    byte[] everyByte = new byte[256];
    for (int i = 0; i < everyByte.length; i++) {
      everyByte[i] = (byte) i;
    }
    Message sent = Message.builder().destination(topic).key("clé <1>").type("Order\u00e9").version(3)
        .payload(everyByte, "application/x-protobuf").header("trace", "ü\"<b>\n").header("n", "1")
        .createdAt(Instant.parse("1999-12-31T23:59:59.999999Z")).build();
    List<Message> published = new CopyOnWriteArrayList<>();
    Metrics recording = new Metrics() {
      @Override
      public void published(String subscription, List<Message> acknowledged) {
        published.addAll(acknowledged);
      }
    };
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).metrics(recording).build().start()) {
      db.commit(mode.outbox(db), sent);
      await().atMost(Duration.ofSeconds(30)).until(() -> !published.isEmpty());
    }
    assertThat(published).containsExactly(sent);
  }

  @Test
  void anUnreadableWalMessageIsDeadLetteredAndTheStreamGoesOn() throws Exception {
    Outbox outbox = db.walOutbox();
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start()) {
      db.commit(outbox, event("k", "before"));
      db.exec("SELECT pg_logical_emit_message(true, 'txbox', 'not an envelope'::bytea)");
      db.exec("SELECT pg_logical_emit_message(true, 'txbox', '\\x09'::bytea)"); // a newer format
      db.commit(outbox, event("k", "after"));
      assertThat(payloads(readAll(2))).containsExactly("before", "after");
      List<String> errors = deadLetterErrors();
      assertThat(errors).hasSize(2);
      assertThat(errors).anySatisfy(e -> assertThat(e).contains("envelope format 110"));
      assertThat(errors).anySatisfy(e -> assertThat(e).contains("envelope format 9").contains("upgrade the relay"));
    }
  }

  @Test
  void plainSqlWritersSendThroughTheEmitFunction() throws Exception {
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start()) {
      db.exec("SELECT " + db.schema + ".txbox_emit('" + topic + "', 'order-42', 'OrderPlaced',"
          + " convert_to('{\"id\":42}', 'UTF8'), version => 3, content_type => 'application/json',"
          + " headers => '{\"tenant\": \"acme\"}')");
      db.exec("SELECT " + db.schema + ".txbox_emit('" + topic + "', NULL, 'Pinged', ''::bytea)");
      db.exec("SELECT " + db.schema + ".txbox_emit('" + topic + "', 'k', 'Tagged', '\\x00ff'::bytea,"
          + " headers => '{\"a\": \"1\", \"b\": \"\", \"q\": \"say \\\"hi\\\"\\n\", \"n\": 5}')");
      assertThatThrownBy(() -> db.exec("SELECT " + db.schema + ".txbox_emit('" + topic + "', 'k', 'T', ''::bytea,"
          + " headers => '[\"not\", \"an object\"]')"))
          .hasStackTraceContaining("headers must be a JSON object of names and strings, was array");
      db.exec("SELECT " + db.schema + ".txbox_emit('" + topic + "', 'k', 'Defaulted', '\\x01'::bytea,"
          + " headers => NULL, available_at => now() - interval '1 minute')");
      List<TopicReader.Received> all = readAll(4);
      TopicReader.Received got = all.get(0);
      assertThat(got.key()).isEqualTo("order-42");
      assertThat(new String(got.value(), StandardCharsets.UTF_8)).isEqualTo("{\"id\":42}");
      assertThat(got.headers()).containsEntry("txbox-type", "OrderPlaced").containsEntry("txbox-version", "3")
          .containsEntry("content-type", "application/json").containsEntry("tenant", "acme");
      assertThat(all.get(1).key()).isNull();
      assertThat(all.get(1).value()).isEmpty();
      assertThat(all.get(1).headers()).containsEntry("txbox-type", "Pinged").containsEntry("txbox-version", "1")
          .doesNotContainKey("tenant");
      assertThat(all.get(2).value()).containsExactly(0x00, 0xff);
      assertThat(all.get(2).headers()).containsEntry("a", "1").containsEntry("b", "")
          .containsEntry("q", "say \"hi\"\n").containsEntry("n", "5");
      assertThat(all.get(3).value()).containsExactly(0x01);
      assertThat(all.get(3).headers()).containsEntry("txbox-type", "Defaulted")
          .containsEntry("content-type", "application/octet-stream").doesNotContainKey("tenant");
    }
  }

  @Test
  void theEmitFunctionWritesTextsOfManyBytesAndNamesStartingWithASpaceOrALetterBeyondAscii() throws Exception {
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start()) {
      emitTextsBeyondAscii(db, "UTF8");
    }
  }

  /** The emit function counts a text's bytes one way in UTF-8 databases and another elsewhere. */
  @Test
  void theEmitFunctionWritesUtf8TextsFromADatabaseOfAnotherEncoding() throws Exception {
    String database = "latin1_" + db.schema;
    db.exec("CREATE DATABASE " + database + " ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
    try (LogicalDatabase latin1 = LogicalDatabase.freshIn(database);
        LogicalRelay relay = latin1.relay(kafka.bootstrapServers()).build().start()) {
      emitTextsBeyondAscii(latin1, "LATIN1");
    } finally {
      db.exec("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
    }
  }

  /** Texts of two bytes a character in UTF-8 and one in LATIN1; names past the ASCII test. */
  private void emitTextsBeyondAscii(LogicalDatabase target, String encoding) throws SQLException {
    try (Connection c = target.dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW server_encoding")) {
      rs.next();
      assertThat(rs.getString(1)).as("the encoding whose form of the emit function this test drives").isEqualTo(encoding);
    }
    target.exec("SELECT " + target.schema + ".txbox_emit('" + topic + "', 'clé-ü', 'Überwiesen', convert_to('ça', 'UTF8'),"
        + " content_type => ' text/plain', headers => '{\"ville\": \"Zürich\"}')");
    TopicReader.Received got = readAll(1).get(0);
    assertThat(got.key()).isEqualTo("clé-ü");
    assertThat(new String(got.value(), StandardCharsets.UTF_8)).isEqualTo("ça");
    assertThat(got.headers()).containsEntry("txbox-type", "Überwiesen").containsEntry("content-type", " text/plain")
        .containsEntry("ville", "Zürich");
  }

  @Test
  void theEmitFunctionRefusesWhatTheOutboxTableRefusesAndNamesTheField() {
    String emit = "SELECT " + db.schema + ".txbox_emit(";
    String tooLong = "'" + "x".repeat(Message.MAX_NAME_LENGTH + 1) + "'";
    Map<String, String> refusals = new LinkedHashMap<>();
    refusals.put(emit + "'orders', 'k', NULL, ''::bytea)", "type must be 1 to 255 characters and not blank, was null");
    refusals.put(emit + "'orders', 'k', ' ', ''::bytea)", "type must be 1 to 255 characters and not blank, was blank");
    refusals.put(emit + tooLong + ", 'k', 'T', ''::bytea)", "destination must be 1 to 255 characters and not blank, was 256 characters");
    refusals.put(emit + "'orders', " + tooLong + ", 'T', ''::bytea)", "key must be at most 255 characters, was 256");
    refusals.put(emit + "'orders', 'k', 'T', NULL)", "payload must not be null");
    refusals.put(emit + "'orders', 'k', 'T', ''::bytea, version => 0)", "version must be 1 or more, was 0");
    refusals.put(emit + "'orders', 'k', 'T', ''::bytea, content_type => '')",
        "content_type must be 1 to 255 characters and not blank, was blank");
    refusals.put(emit + "'orders', 'k', 'T', ''::bytea, headers => 'null')", "headers must be a JSON object");
    // these two once returned an id as if the event had been sent
    refusals.put(emit + "'orders', 'k', 'T', ''::bytea, message_prefix => NULL)", "id and message_prefix must not be null");
    refusals.put(emit + "'orders', 'k', 'T', ''::bytea, id => NULL)", "id and message_prefix must not be null");
    refusals.forEach((call, error) -> assertThatThrownBy(() -> db.exec(call)).as(call).hasStackTraceContaining(error));
  }

  @Test
  void aStandbyTakesTheSlotOverWhenTheActiveRelayStops() throws Exception {
    Outbox outbox = db.walOutbox();
    LogicalRelay first = db.relay(kafka.bootstrapServers()).build().start();
    await().atMost(Duration.ofSeconds(20)).until(first::isStreaming);
    try (LogicalRelay second = db.relay(kafka.bootstrapServers()).standbyInterval(Duration.ofMillis(200)).build().start()) {
      db.commit(outbox, event("k", "1"));
      readAll(1);
      assertThat(second.isStreaming()).isFalse();
      first.close();
      long stopped = System.nanoTime();
      await().atMost(Duration.ofSeconds(10)).until(second::isStreaming);
      System.out.printf("standby took over %d ms after the active relay closed%n", (System.nanoTime() - stopped) / 1_000_000);
      db.commit(outbox, event("k", "2"));
      assertThat(payloads(readAll(2))).containsExactly("1", "2");
    } finally {
      first.close();
    }
  }

  @Test
  void anOutboxPartitionedWhileTheSlotIsStreamedIsStreamedOnFromItsPartitions() throws Exception {
    Outbox outbox = db.tableOutbox();
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start()) {
      db.commit(outbox, event("k", "before"));
      PostgresOutboxStore.builder(db.dataSource).schema(db.schema)
          .outboxPartitionSize(PostgresOutboxStore.MIN_PARTITION_SIZE).build().migrate();
      db.commit(outbox, event("k", "after"));
      db.exec("INSERT INTO " + db.store.operator().outboxTable() + " (key, type, destination, payload)"
          + " SELECT 'k', 'T', '" + topic + "', convert_to('row ' || g, 'UTF8') FROM generate_series(1, 1500) g");

      List<String> payloads = payloads(readAll(1_502));
      assertThat(payloads.subList(0, 3)).containsExactly("before", "after", "row 1");
      assertThat(payloads.get(1_501)).isEqualTo("row 1500");
    }
  }

  @Test
  void theJanitorDeletesRowsTheSlotRelayedOnceTheyPassRetention() throws Exception {
    Outbox outbox = db.tableOutbox();
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start()) {
      db.commit(outbox, event("k", "1"), event("k", "2"));
      readAll(2);
    }
    Janitor janitor = Janitor.builder(db.store.janitor()).outboxRetention(Duration.ZERO).build();
    assertThat(janitor.runOnce().outboxEvents()).isEqualTo(2);
  }

  @Test
  void aMissingSlotIsReportedAndNeverCreatedByTheRelay() {
    db.replication.drop();
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start()) {
      await().atMost(Duration.ofSeconds(10)).until(relay::isTroubled);
      assertThat(relay.problem()).contains("does not exist").contains("migrate");
      assertThat(db.replication.status()).isEmpty();
    }
    db.replication.migrate(); // for tearDown
  }

  @Test
  void aDatabaseThatCommitsAsynchronouslyIsToldWhichSettingsHoldEventsBack() {
    // The embedded server keeps zonky's default, synchronous_commit = off, as some production servers do.
    assertThat(db.replication.asynchronousCommitNotice()).hasValueSatisfying(notice -> assertThat(notice)
        .contains("synchronous_commit = off", "wal_writer_delay (200ms)", "synchronous_commit = on"));
    try (HikariDataSource flushing = TestDatabase.pool(LogicalDatabase.jdbcUrl() + "&options=-c%20synchronous_commit%3Don", 1)) {
      LogicalReplication replication = LogicalReplication.builder(flushing, db.store).slot(db.schema).build();
      assertThat(replication.asynchronousCommitNotice()).isEmpty();
    }
  }

  private List<String> deadLetterErrors() throws SQLException {
    List<String> errors = new ArrayList<>();
    try (Connection c = db.dataSource.getConnection();
        PreparedStatement p = c.prepareStatement("SELECT error FROM " + db.schema + ".txbox_dead_letter ORDER BY position");
        ResultSet rs = p.executeQuery()) {
      while (rs.next()) {
        errors.add(rs.getString(1));
      }
    }
    return errors;
  }

  private Message event(String key, String payload) {
    return Message.builder().destination(topic).key(key).type("Test").payload(payload.getBytes(StandardCharsets.UTF_8)).build();
  }

  private List<TopicReader.Received> readAll(int count) {
    try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      List<TopicReader.Received> got = reader.readUntil(r -> r.size() >= count, Duration.ofSeconds(60));
      assertThat(got).as("records on " + topic).hasSizeGreaterThanOrEqualTo(count);
      return got;
    }
  }

  private List<TopicReader.Received> readFor(Duration time) {
    try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      return reader.readUntil(r -> false, time);
    }
  }

  private static List<String> payloads(List<TopicReader.Received> records) {
    return records.stream().map(r -> new String(r.value(), StandardCharsets.UTF_8)).toList();
  }
}
