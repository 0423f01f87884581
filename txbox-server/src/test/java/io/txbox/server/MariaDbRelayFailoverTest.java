package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestMariaDb;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code txbox relay} on MariaDB as separate processes: four relays over one subscription, one of
 * them SIGKILLed every few seconds and replaced, while four writers commit in overlapping
 * transactions (so that positions commit out of order). Nothing may be lost, and each key's
 * events arrive in position order.
 */
@FaultDrill
class MariaDbRelayFailoverTest {
  private static final int EVENTS = 200_000;
  private static final int WRITERS = 4;
  private static final int RELAYS = 4;
  private static final int KEYS = 500;
  private final KafkaBroker kafka = KafkaBroker.shared();
  private TestMariaDb db;
  private MariaDbOutboxStore store;
  private String topic;
  @TempDir Path dir;

  @BeforeEach
  void setUp() {
    db = TestMariaDb.create();
    store = MariaDbOutboxStore.builder(db.dataSource()).build();
    topic = "mariadb-failover-" + UUID.randomUUID();
    kafka.createTopic(topic, 8);
  }

  @AfterEach
  void tearDown() {
    db.close();
  }

  private List<String> relayArgs(int index) {
    return List.of("--jdbc-url", db.jdbcUrl(), "--kafka-bootstrap-servers", kafka.bootstrapServers(),
        "--instance-id", "relay-" + index, "--migrate", "--batch-size", "1000", "--idle-interval", "20ms",
        "--heartbeat-interval", "250ms", "--lease-duration", "2s");
  }

  @Test
  void fourRelaysKilledOneAfterAnotherWhileWritersCommitLoseNothingAndKeepEachKeysOrder() throws Exception {
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      List<Process> running = new ArrayList<>();
      for (int i = 0; i < RELAYS; i++) {
        running.add(relays.start(dir, relayArgs(i)));
      }
      try {
        await().atMost(Duration.ofSeconds(60)).until(() -> tableExists() && owners() == RELAYS);
      } catch (ConditionTimeoutException e) {
        throw new AssertionError("the " + RELAYS + " relays did not all come to hold buckets; their logs:\n"
            + relays.logTails(15), e);
      }

      CompletableFuture<Void> writers = CompletableFuture.allOf(IntStream.range(0, WRITERS)
          .mapToObj(w -> CompletableFuture.runAsync(() -> writeEvents(w))).toArray(CompletableFuture[]::new));
      Random random = new Random(7);
      int kills = 0;
      for (int started = RELAYS; !writers.isDone() || kills < 5; started++, kills++) {
        TimeUnit.SECONDS.sleep(4); // the pace of the chaos: a kill every few seconds
        int victim = random.nextInt(RELAYS);
        running.get(victim).destroyForcibly(); // SIGKILL: no drain, leases left to expire
        running.get(victim).waitFor(10, TimeUnit.SECONDS);
        running.set(victim, relays.start(dir, relayArgs(started)));
      }
      writers.get(60, TimeUnit.SECONDS);

      List<TopicReader.Received> got = reader.readUntil(
          r -> r.size() >= EVENTS && TopicReader.distinctIds(r).size() >= EVENTS, Duration.ofSeconds(180));
      assertThat(TopicReader.distinctIds(got)).as("every event delivered, after %d kills", kills).hasSize(EVENTS);
      assertThat(TopicReader.firstDeliveriesByKey(got)).isEqualTo(expectedByKey());
    }
  }

  /** Writer {@code w}'s share of the events, one to 39 per transaction, over keys all writers share. */
  private void writeEvents(int w) {
    Outbox outbox = Outbox.create(store.writer());
    int share = EVENTS / WRITERS;
    try {
      for (int i = 0; i < share; ) {
        List<Message> batch = new ArrayList<>();
        for (int inTx = 1 + (i + w) % 39; batch.size() < inTx && i < share; i++) {
          int n = w * share + i;
          batch.add(Message.builder().type("Test").destination(topic).key("key-" + (n % KEYS))
              .payload(Integer.toString(n).getBytes(StandardCharsets.UTF_8)).build());
        }
        try (Connection c = db.dataSource().getConnection()) {
          c.setAutoCommit(false);
          outbox.send(c, batch);
          c.commit();
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private boolean tableExists() throws SQLException {
    return db.queryLong("SELECT COUNT(*) FROM information_schema.tables"
        + " WHERE table_schema = DATABASE() AND table_name = 'txbox_subscription'") == 1;
  }

  private long owners() throws SQLException {
    return db.queryLong("SELECT COUNT(DISTINCT owner) FROM txbox_subscription WHERE lease_until > UTC_TIMESTAMP(6)");
  }

  /** Per key, the ids in position order: the order the relay promises. */
  private Map<String, List<String>> expectedByKey() throws SQLException {
    Map<String, List<String>> byKey = new LinkedHashMap<>();
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement("SELECT `key`, id FROM txbox_outbox ORDER BY position");
        ResultSet rs = p.executeQuery()) {
      while (rs.next()) {
        byKey.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getString(2));
      }
    }
    return byKey;
  }
}
