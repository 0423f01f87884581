package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.testkit.TestMariaDb;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code txbox relay} on MariaDB, run as operators run it: its backlog gauge, its readiness while
 * an open transaction holds delivery back, and its stall warning naming that transaction.
 */
class MariaDbRelayCommandTest {
  private TestMariaDb db;
  private Outbox outbox;
  @TempDir Path dir;

  @BeforeEach
  void setUp() {
    db = TestMariaDb.create();
    MariaDbOutboxStore store = MariaDbOutboxStore.builder(db.dataSource()).build();
    store.migrate();
    outbox = Outbox.create(store.writer());
  }

  @AfterEach
  void tearDown() {
    db.close();
  }

  @Test
  void aTransactionHeldOpenTurnsReadinessDownNamesItselfInTheLogAndAllFlowsOnceItEnds() throws Exception {
    try (RelayProcesses relays = new RelayProcesses()) {
      relays.start(dir, List.of("--jdbc-url", db.jdbcUrl(), "--broker", "memory", "--memory-space",
          "mariadb-" + UUID.randomUUID(), "--idle-interval", "20ms", "--heartbeat-interval", "250ms",
          "--max-pending-age", "2s", "--stall-warning", "1s"));
      OpsClient ops = OpsClient.of(relays, 0);
      send(outbox, "before");
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
        OpsClient.Answer ready = ops.get("/health/ready");
        assertThat(ready.status()).as(ready.body()).isEqualTo(200);
        assertThat(ready.body()).contains("\"relay\":\"running\"", "\"problems\":[]");
      });
      assertThat(ops.get("/metrics").body()).contains("txbox_outbox_pending{");

      try (Connection held = db.dataSource().getConnection()) {
        held.setAutoCommit(false);
        outbox.send(held, message("held")); // takes its position now, commits last
        send(outbox, "waiting");
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
          OpsClient.Answer ready = ops.get("/health/ready");
          assertThat(ready.status()).as(ready.body()).isEqualTo(503);
          assertThat(ready.body()).contains("subscription default: the oldest pending event has waited",
              "more than the limit of PT2S");
        });
        await().atMost(Duration.ofSeconds(30)).until(() -> relays.log(0)
            .contains("delivery is held back by a transaction open for"));
        held.commit();
      }
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
        OpsClient.Answer ready = ops.get("/health/ready");
        assertThat(ready.status()).as(ready.body()).isEqualTo(200);
        assertThat(ready.body()).contains("\"problems\":[]");
      });
    }
  }

  private void send(Outbox outbox, String body) throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.send(c, message(body));
      c.commit();
    }
  }

  private static Message message(String body) {
    return Message.builder().type("Test").destination("d").key("k")
        .payload(body.getBytes(StandardCharsets.UTF_8)).build();
  }
}
