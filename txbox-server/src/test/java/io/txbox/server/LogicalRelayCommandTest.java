package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.cdc.WalOutboxStore;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TopicReader;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code migrate --logical}, {@code relay --source logical} and {@code logical status|drop}. */
class LogicalRelayCommandTest {
  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  private int run(String... args) {
    CommandLine cli = TxboxCommand.commandLine(args, Map.of());
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    return cli.execute(args);
  }

  @Test
  void migrateLogicalOnAServerWithoutLogicalWalNamesTheSetting() {
    try (TestDatabase db = TestDatabase.create()) {
      assertThat(run("migrate", "--logical", "--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema())).isNotZero();
      assertThat(err.toString()).contains("wal_level = replica").contains("wal_level = logical");
    }
  }

  @Test
  void aSlotIsMigratedStreamedToKafkaWatchedAndDropped(@TempDir Path dir) throws Exception {
    KafkaBroker kafka = KafkaBroker.shared();
    String topic = "cli-" + UUID.randomUUID();
    kafka.createTopic(topic, 1);
    try (EmbeddedPostgres postgres = EmbeddedPostgres.builder().setServerConfig("wal_level", "logical").start();
        RelayProcesses relays = new RelayProcesses()) {
      String url = postgres.getJdbcUrl("postgres", "postgres");
      // A bucket count of its own: the slot's migration upgrades the outbox it names, with that count.
      assertThat(run("migrate", "--logical", "--jdbc-url", url, "--buckets", "16")).as(err.toString()).isZero();
      Process relay = relays.start(dir, List.of("--source", "logical", "--jdbc-url", url, "--buckets", "16",
          "--kafka-bootstrap-servers", kafka.bootstrapServers()));
      try (var pool = TestDatabase.pool(url, 2); Connection c = pool.getConnection()) {
        c.setAutoCommit(false);
        Outbox.create(WalOutboxStore.create()).send(c, Message.builder().destination(topic).key("k").type("T")
            .payload("hello".getBytes(StandardCharsets.UTF_8)).build());
        c.commit();
      }
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
        List<TopicReader.Received> got = reader.readUntil(r -> !r.isEmpty(), Duration.ofSeconds(60));
        assertThat(got).extracting(r -> new String(r.value(), StandardCharsets.UTF_8)).containsExactly("hello");
      }
      OpsClient ops = OpsClient.of(relays, 0);
      // The logical relay's meters mean what the polling relay's do, under the slot's name.
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(ops.get("/metrics").body())
          .contains("txbox_relay_published_total{outbox=\"postgres.public.txbox_outbox\",subscription=\"txbox\"} 1.0")
          .contains("txbox_outbox_oldest_pending_age_seconds{outbox=\"postgres.public.txbox_outbox\",subscription=\"txbox\"}")
          .contains("txbox_outbox_pending{outbox=\"postgres.public.txbox_outbox\",subscription=\"txbox\"}")
          .contains("txbox_slot_active{outbox=\"postgres.public.txbox_outbox\",slot=\"txbox\"} 1.0")
          .doesNotContain("txbox_relay_buckets_owned"));
      OpsClient.Answer ready = ops.ready();
      assertThat(ready.status()).as(ready.body()).isEqualTo(200);
      assertThat(ready.body()).contains("\"relay\":\"streaming\"");
      assertThat(run("logical", "status", "--jdbc-url", url)).isZero();
      assertThat(out.toString()).contains("slot txbox: streamed by server process");
      out.getBuffer().setLength(0);
      assertThat(run("status", "--jdbc-url", url)).as("%s", out).isZero();
      assertThat(out.toString()).contains("slot txbox: streamed by server process").contains("wal_status reserved").contains("HEALTHY")
          .doesNotContain("subscription txbox");

      relay.destroy(); // SIGTERM: confirms and lets the slot go
      assertThat(relay.waitFor(30, TimeUnit.SECONDS)).isTrue();
      await().atMost(Duration.ofSeconds(10)).until(() -> {
        out.getBuffer().setLength(0);
        return run("logical", "status", "--jdbc-url", url) == 0 && out.toString().contains("not streamed");
      });
      out.getBuffer().setLength(0);
      assertThat(run("status", "--json", "--jdbc-url", url)).as("a slot nobody streams").isEqualTo(1);
      assertThat(out.toString()).contains("\"slot\" : \"txbox\"").contains("\"active\" : false")
          .contains("slot txbox: no relay streams it");
      assertThat(run("logical", "drop", "--jdbc-url", url)).isZero();
      assertThat(out.toString()).contains("would drop slot txbox");
      assertThat(run("logical", "drop", "--execute", "--jdbc-url", url)).isZero();
      assertThat(run("logical", "status", "--jdbc-url", url)).isEqualTo(1);
      assertThat(out.toString()).contains("does not exist");
    }
  }

  @Test
  void aRelayWaitingForItsSlotToBeMadeAgainIsNotReadyAndStatusShowsTheSlotBeingCreated(@TempDir Path dir)
      throws Exception {
    KafkaBroker kafka = KafkaBroker.shared();
    String topic = "cli-wait-" + UUID.randomUUID();
    kafka.createTopic(topic, 1);
    try (EmbeddedPostgres postgres = EmbeddedPostgres.builder().setServerConfig("wal_level", "logical").start();
        RelayProcesses relays = new RelayProcesses();
        var pool = TestDatabase.pool(postgres.getJdbcUrl("postgres", "postgres"), 2)) {
      String url = postgres.getJdbcUrl("postgres", "postgres");
      assertThat(run("migrate", "--logical", "--jdbc-url", url)).as(err.toString()).isZero();
      List<String> args = List.of("--source", "logical", "--jdbc-url", url, "--kafka-bootstrap-servers",
          kafka.bootstrapServers(), "--wait-warning", "1s");
      Process first = relays.start(dir, args);
      await().atMost(Duration.ofSeconds(60)).until(() -> queryLong(pool,
          "SELECT count(*) FROM public.txbox_slot_checkpoint WHERE slot = 'txbox'") > 0);
      first.destroyForcibly();
      first.waitFor(30, TimeUnit.SECONDS);
      await().atMost(Duration.ofSeconds(30)).until(() -> queryLong(pool,
          "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'txbox' AND NOT active") == 1);
      queryLong(pool, "SELECT count(*) FROM pg_drop_replication_slot('txbox')"); // a standby promoted without it

      try (Connection open = pool.getConnection()) {
        open.setAutoCommit(false);
        try (var s = open.createStatement()) {
          s.execute("SELECT pg_current_xact_id()"); // a new slot waits for this transaction to end
        }
        relays.start(dir, args);
        OpsClient ops = OpsClient.of(relays, 1);
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
          OpsClient.Answer ready = ops.get("/health/ready");
          assertThat(ready.status()).as(ready.body()).isEqualTo(503);
          assertThat(ready.body()).contains("relayWaits").contains("create slot txbox again");
        });
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(ops.get("/metrics").body())
            .containsPattern("txbox_slot_relay_waiting_seconds\\{[^}]*slot=\"txbox\"} [1-9]"));
        out.getBuffer().setLength(0);
        assertThat(run("status", "--jdbc-url", url)).as("%s", out).isEqualTo(1);
        assertThat(out.toString()).contains("slot txbox: being created by server process").doesNotContain("bytes behind")
            .contains("DEGRADED: slot txbox is being created and streams nothing yet");
        out.getBuffer().setLength(0);
        assertThat(run("status", "--json", "--jdbc-url", url)).isEqualTo(1);
        assertThat(out.toString()).contains("\"beingCreated\" : true").contains("\"lagBytes\" : null");
        open.rollback();
        await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> assertThat(ops.get("/health/ready").status())
            .isEqualTo(200));
      }
    }
  }

  private static long queryLong(javax.sql.DataSource pool, String sql) throws java.sql.SQLException {
    try (Connection c = pool.getConnection(); var s = c.createStatement(); var rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
