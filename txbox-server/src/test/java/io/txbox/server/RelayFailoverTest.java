package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Relays as separate processes over one subscription: sharing, SIGKILL mid-run, SIGTERM drain. */
@FaultDrill
class RelayFailoverTest {
  private static final int EVENTS = 6000;
  private final KafkaBroker kafka = KafkaBroker.shared();
  private TestDatabase db;
  private PostgresOutboxStore store;
  private String topic;
  @TempDir Path dir;

  @BeforeEach
  void setUp() {
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build();
    store.migrate();
    topic = "failover-" + UUID.randomUUID();
    kafka.createTopic(topic, 8);
  }

  @AfterEach
  void tearDown() {
    db.close();
  }

  private List<String> relayArgs(int index) {
    return List.of("--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema(),
        "--kafka-bootstrap-servers", kafka.bootstrapServers(), "--instance-id", "relay-" + index,
        "--batch-size", "100", "--idle-interval", "20ms", "--heartbeat-interval", "250ms",
        "--lease-duration", "2s");
  }

  @ParameterizedTest(name = "{0} relays")
  @ValueSource(ints = {2, 4})
  void relaysShareTheBucketsAndAKilledOneLosesNothing(int instances) throws Exception {
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      List<Process> processes = new ArrayList<>();
      for (int i = 0; i < instances; i++) {
        processes.add(relays.start(dir, relayArgs(i)));
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> owners() == instances);

      CompletableFuture<Void> writer = CompletableFuture.runAsync(this::writeEvents);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= EVENTS / 4, Duration.ofSeconds(60));
      processes.get(0).destroyForcibly(); // SIGKILL: no drain, leases left to expire
      processes.get(0).waitFor(10, TimeUnit.SECONDS);
      writer.get(120, TimeUnit.SECONDS);

      List<TopicReader.Received> got =
          reader.readUntil(r -> TopicReader.distinctIds(r).size() >= EVENTS, Duration.ofSeconds(120));
      assertThat(TopicReader.distinctIds(got)).hasSize(EVENTS);
      assertThat(TopicReader.firstDeliveriesByKey(got)).isEqualTo(expectedByKey());
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(owners()).isEqualTo(instances - 1));
      assertThat(count("SELECT count(*) FROM {schema}.txbox_subscription WHERE owner LIKE 'relay-0/%'")).isZero();
    }
  }

  @Test
  void aRelaySigkilledAndStartedAgainUnderItsInstanceIdDeliversOnceItsPredecessorsLeasesEnd() throws Exception {
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      Process first = relays.start(dir, relayArgs(0));
      await().atMost(Duration.ofSeconds(60)).until(() -> owners() == 1);
      writeEvents(0, 500);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 500, Duration.ofSeconds(60));
      first.destroyForcibly(); // SIGKILL: its leases stay, under the name relay-0
      first.waitFor(10, TimeUnit.SECONDS);

      relays.start(dir, relayArgs(0)); // as a StatefulSet restarts pod relay-0
      writeEvents(500, 500);
      // Within the predecessor's lease (2 s) and the new one's start, not never.
      List<TopicReader.Received> got =
          reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 1000, Duration.ofSeconds(60));
      assertThat(TopicReader.distinctIds(got)).as(relays.logTails(20)).hasSize(1000);
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(count(
          "SELECT count(DISTINCT owner) FROM {schema}.txbox_subscription WHERE owner LIKE 'relay-0/%'"
              + " AND lease_until > now()")).isEqualTo(1));
    }
  }

  @Test
  void sigtermFinishesTheRoundGivesTheBucketsBackAndExits() throws Exception {
    try (RelayProcesses relays = new RelayProcesses()) {
      Process relay = relays.start(dir, relayArgs(0));
      await().atMost(Duration.ofSeconds(60)).until(() -> owners() == 1);
      writeEvents();
      relay.destroy(); // SIGTERM
      assertThat(relay.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(relays.log(0)).contains("relay relay-0 stopped cleanly");
      assertThat(count("SELECT count(*) FROM {schema}.txbox_subscription WHERE owner IS NOT NULL")).isZero();
    }
  }

  @Test
  void aRelayFrozenPastItsLeaseSendsNothingOfTheBucketsTakenMeanwhileAndLogsNoSecret() throws Exception {
    List<String> frozenArgs = new ArrayList<>(relayArgs(0));
    frozenArgs.set(1, TestDatabase.jdbcUrl() + (TestDatabase.jdbcUrl().contains("?") ? "&" : "?")
        + "password=s3cr3t-in-url");
    frozenArgs.addAll(List.of("--kafka-producer", "ssl.truststore.password=s3cr3t-property"));
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      Process frozen = relays.start(dir, frozenArgs);
      relays.start(dir, relayArgs(1));
      await().atMost(Duration.ofSeconds(60)).until(() -> owners() == 2);
      writeEvents(0, 1000);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 1000, Duration.ofSeconds(60));
      signal("STOP", frozen);
      try {
        await().atMost(Duration.ofSeconds(30)).until(() -> count(
            "SELECT count(*) FROM {schema}.txbox_subscription WHERE owner LIKE 'relay-1/%' AND lease_until > now()")
            == PostgresOutboxStore.DEFAULT_BUCKETS);
        writeEvents(1000, 1000);
        reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 2000, Duration.ofSeconds(60));
      } finally {
        signal("CONT", frozen);
      }
      writeEvents(2000, 1000); // while the resumed relay still believes it holds its old buckets
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 3000, Duration.ofSeconds(60));
      List<TopicReader.Received> got = reader.readUntil(r -> false, Duration.ofSeconds(3));
      Map<String, Long> copies = got.stream()
          .filter(r -> Integer.parseInt(new String(r.value(), StandardCharsets.UTF_8)) >= 1000)
          .collect(java.util.stream.Collectors.groupingBy(TopicReader.Received::id,
              java.util.stream.Collectors.counting()));
      assertThat(copies).hasSize(2000);
      assertThat(copies.values()).as("no event written after the freeze was sent twice").containsOnly(1L);
      assertThat(relays.log(0)).contains("password=***").doesNotContain("s3cr3t-in-url", "s3cr3t-property");
    }
  }

  private static void signal(String signal, Process process) throws Exception {
    new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start().waitFor();
  }

  private void writeEvents() {
    writeEvents(0, EVENTS);
  }

  /** Writes events {@code first} to {@code first + count - 1} from one thread, one to three per transaction, over 50 keys. */
  private void writeEvents(int first, int count) {
    Outbox outbox = Outbox.create(store.writer());
    int end = first + count;
    try {
      for (int i = first; i < end; ) {
        try (Connection c = db.dataSource().getConnection()) {
          c.setAutoCommit(false);
          int inTx = 1 + i % 3;
          for (int j = 0; j < inTx && i < end; j++, i++) {
            outbox.send(c, Message.builder().type("Test").destination(topic).key("key-" + (i % 50))
                .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).build());
          }
          c.commit();
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private int owners() throws SQLException {
    return OutboxRows.owners(db.dataSource(), db.schema());
  }

  private int count(String sql) throws SQLException {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(sql.replace("{schema}", db.schema()));
        ResultSet rs = p.executeQuery()) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private Map<String, List<String>> expectedByKey() throws SQLException {
    return OutboxRows.byKey(db.dataSource(), store.operator().outboxTable());
  }
}
