package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code txbox relay} as an operator deploys it and leaves it: its janitor, its endpoints, its environment. */
class RelayUnattendedTest {
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
    topic = "unattended-" + UUID.randomUUID();
    kafka.createTopic(topic, 4);
  }

  @AfterEach
  void tearDown() {
    db.close();
  }

  private List<String> relayArgs(String... more) {
    List<String> args = new ArrayList<>(List.of("--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema(),
        "--kafka-bootstrap-servers", kafka.bootstrapServers(), "--idle-interval", "20ms"));
    args.addAll(List.of(more));
    return args;
  }

  @Test
  void theRelayDeletesRelayedEventsPastTheRetentionByItself() throws Exception {
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      relays.start(dir, relayArgs("--outbox-retention", "0s", "--janitor-interval", "1s"));
      write(500);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 500, Duration.ofSeconds(60));
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
          assertThat(count("SELECT count(*) FROM {schema}.txbox_outbox")).isZero());
      assertThat(relays.log(0)).contains("janitor every 1s (outbox retention 0s, inbox retention 30d)");
    }
  }

  @Test
  void aRelayToldToRunNoJanitorLeavesRelayedEventsAlone() throws Exception {
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      relays.start(dir, List.of(), Map.of("TXBOX_JANITOR", "false"),
          relayArgs("--outbox-retention", "0s", "--janitor-interval", "1s"));
      write(100);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 100, Duration.ofSeconds(60));
      // Three janitor intervals, had one been running, and every event still there throughout.
      await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(6))
          .until(() -> count("SELECT count(*) FROM {schema}.txbox_outbox") == 100);
      assertThat(relays.log(0)).contains("no janitor (--no-janitor)");
    }
  }

  @Test
  void theRelayServesTheStartersMetersAndHealthProbes() throws Exception {
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      relays.start(dir, relayArgs());
      write(100);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 100, Duration.ofSeconds(60));
      OpsClient ops = OpsClient.of(relays, 0);
      // Tagged with the outbox as the starter tags an application's: database, schema and table.
      String labels = "{outbox=\"" + store.operator().outboxName() + "\",subscription=\"default\"";
      assertThat(store.operator().outboxName()).endsWith("." + db.schema() + ".txbox_outbox");
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(ops.get("/metrics").body())
          .contains("txbox_relay_published_total" + labels + "} 100.0"));
      assertThat(ops.get("/metrics").body())
          .contains("txbox_outbox_pending" + labels + "}")
          .contains("txbox_outbox_oldest_pending_age_seconds" + labels + "}")
          .contains("txbox_relay_buckets_owned" + labels + "} 64.0")
          .contains("txbox_relay_lag_seconds" + labels + ",quantile=\"0.99\"}")
          .contains("txbox_loops_troubled{outbox=\"" + store.operator().outboxName() + "\"} 0.0")
          .contains("txbox_janitor_failures_total{outbox=\"" + store.operator().outboxName() + "\"} 0.0")
          .contains("jvm_memory_used_bytes").contains("process_uptime_seconds").contains("process_cpu_usage");
      assertThat(ops.get("/health/live").status()).isEqualTo(200);
      OpsClient.Answer ready = ops.ready();
      assertThat(ready.status()).as(ready.body()).isEqualTo(200);
      assertThat(ready.body()).contains("\"status\":\"UP\"").contains("\"relay\":\"running\"")
          .contains("\"problems\":[]");
      assertThat(ops.get("/nowhere").status()).isEqualTo(404);
    }
  }

  @Test
  void aRelayThatCannotDeliverIsLiveButNotReadyAndSaysWhy() throws Exception {
    try (RelayProcesses relays = new RelayProcesses()) {
      List<String> args = relayArgs("--kafka-producer", "max.block.ms=1000");
      args.set(args.indexOf("--kafka-bootstrap-servers") + 1, "127.0.0.1:1"); // no broker there
      relays.start(dir, args);
      write(10);
      OpsClient ops = OpsClient.of(relays, 0);
      await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> {
        OpsClient.Answer ready = ops.get("/health/ready");
        assertThat(ready.status()).as(ready.body()).isEqualTo(503);
        assertThat(ready.body()).contains("\"status\":\"DOWN\"").contains("retrying a failed event");
      });
      assertThat(ops.get("/health/live").status()).as("alive: restarting it would not help").isEqualTo(200);
      assertThat(ops.get("/metrics").body()).contains("txbox_relay_failures_by_error_total{error=\"TimeoutException\",outbox=");
    }
  }

  @Test
  void theConsoleServesMetersAndProbesOnAPortOfItsOwn() throws Exception {
    try (RelayProcesses processes = new RelayProcesses()) {
      processes.startCommand(dir, "console", List.of(), Map.of(), List.of("--jdbc-url", TestDatabase.jdbcUrl(),
          "--schema", db.schema(), "--listen", "127.0.0.1:0"));
      OpsClient ops = OpsClient.of(processes, 0);
      OpsClient.Answer ready = ops.ready();
      assertThat(ready.status()).as(ready.body()).isEqualTo(200);
      assertThat(ready.body()).contains("\"database\":\"reachable\"");
      assertThat(ops.get("/health/live").status()).isEqualTo(200);
      assertThat(ops.get("/metrics").body()).contains("jvm_memory_used_bytes").contains("process_uptime_seconds");
      assertThat(processes.log(0)).contains("metrics and health at http://127.0.0.1:");
    }
  }

  private void write(int events) throws SQLException {
    Outbox outbox = Outbox.create(store.writer());
    for (int i = 0; i < events; i++) {
      try (Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        outbox.send(c, Message.builder().type("Test").destination(topic).key("key-" + i % 10)
            .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).build());
        c.commit();
      }
    }
  }

  private int count(String sql) throws SQLException {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(sql.replace("{schema}", db.schema()));
        ResultSet rs = p.executeQuery()) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
