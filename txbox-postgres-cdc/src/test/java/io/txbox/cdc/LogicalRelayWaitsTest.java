package io.txbox.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.kafka.KafkaPublisher;
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
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the logical relay and {@code txbox status} say while a call to the server does not return:
 * the slot made again behind a transaction that stays open, and commits that wait for a
 * synchronous standby that is gone (the failover in which a promoted node still named the dead
 * standby). Neither may look like a slot being streamed.
 */
class LogicalRelayWaitsTest {
  private final KafkaBroker kafka = KafkaBroker.shared();
  private LogicalDatabase db;
  private String topic;

  @BeforeEach
  void setUp() {
    db = LogicalDatabase.fresh();
    topic = "cdc-waits-" + UUID.randomUUID();
    kafka.createTopic(topic, 1);
  }

  @AfterEach
  void tearDown() {
    db.close();
  }

  @Test
  void aSlotMadeAgainBehindAnOpenTransactionIsAWaitTheRelayNamesAndNoStreamedSlot() throws Exception {
    Outbox outbox = db.tableOutbox();
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).checkpointInterval(Duration.ofMillis(200))
        .build().start()) {
      db.commit(outbox, event("1"));
      readUntil("1");
      await().atMost(Duration.ofSeconds(20)).until(this::checkpointWritten);
    }
    db.exec("SELECT pg_drop_replication_slot('" + db.replication.slot() + "')"); // a standby promoted without it
    try (Connection open = db.dataSource.getConnection()) {
      open.setAutoCommit(false);
      try (Statement s = open.createStatement()) {
        s.execute("SELECT pg_current_xact_id()"); // open, with an id: a new slot waits for it to end
      }
      db.commit(outbox, event("2"));
      try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).waitWarning(Duration.ofSeconds(1))
          .build().start()) {
        await().atMost(Duration.ofSeconds(30)).until(() -> relay.stalled().isPresent());
        assertThat(relay.stalled().orElseThrow().what()).contains("create slot " + db.replication.slot() + " again")
            .contains("synchronous_standby_names");
        assertThat(relay.isStreaming()).isFalse();
        SlotReport report = SlotReport.read(db.dataSource, db.store);
        assertThat(report.slots()).singleElement().satisfies(s -> {
          assertThat(s.beingCreated()).isTrue();
          assertThat(s.state()).startsWith("being created").doesNotContain("streamed by");
        });

        open.rollback();
        await().atMost(Duration.ofSeconds(30)).until(relay::isStreaming);
        assertThat(relay.stalled()).isEmpty();
        readUntil("2"); // the row the checkpoint did not cover, relayed from the table
        assertThat(SlotReport.read(db.dataSource, db.store).slots()).singleElement()
            .satisfies(s -> assertThat(s.beingCreated()).isFalse());
      }
    }
  }

  @Test
  void commitsWaitingForASynchronousStandbyThatIsGoneAreNamedByTheRelayAndTheReport() throws Exception {
    // The embedded server commits asynchronously by default, which never waits for a standby.
    try (HikariDataSource flushing = TestDatabase.pool(db.url + "&options=-c%20synchronous_commit%3Don", 4)) {
      LogicalReplication replication = LogicalReplication.builder(flushing, db.store).slot(db.replication.slot())
          .publication(db.replication.publication()).build();
      try (LogicalRelay relay = LogicalRelay.builder(replication,
              KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
          .connection(db.url, LogicalDatabase.credentials()).checkpointInterval(Duration.ofMillis(200))
          .waitWarning(Duration.ofSeconds(1)).build().start()) {
        await().atMost(Duration.ofSeconds(20)).until(relay::isStreaming);
        db.commit(db.tableOutbox(), event("before"));
        readUntil("before"); // something to checkpoint
        CompletableFuture<Void> hanging;
        setSynchronousStandbys("'gone_standby'");
        try {
          hanging = CompletableFuture.runAsync(() -> commitFlushed(flushing, "while the standby is gone"));
          await().atMost(Duration.ofSeconds(30)).until(() -> relay.stalled().isPresent());
          assertThat(relay.stalled().orElseThrow().what()).contains("commit the checkpoint of slot")
              .contains("synchronous_standby_names");
          await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(
              SlotReport.read(db.dataSource, db.store).problems()).anySatisfy(p -> assertThat(p)
              .contains("wait for a synchronous standby").contains("synchronous_standby_names = 'gone_standby'")));
          assertThat(db.store.relay().oldestOpenTransaction()).hasValueSatisfying(t -> assertThat(t.description())
              .contains("waiting for a synchronous standby"));
        } finally {
          setSynchronousStandbys("''");
        }
        hanging.get(30, TimeUnit.SECONDS); // released by the reload
        await().atMost(Duration.ofSeconds(30)).until(() -> relay.stalled().isEmpty());
        assertThat(SlotReport.read(db.dataSource, db.store).problems()).isEmpty();
        readUntil("while the standby is gone");
      }
    }
  }

  @Test
  void aRelayThatAStarMakesASynchronousStandbyIsNamedByTheReport() throws Exception {
    try (LogicalRelay relay = db.relay(kafka.bootstrapServers()).build().start()) {
      await().atMost(Duration.ofSeconds(20)).until(relay::isStreaming);
      assertThat(SlotReport.read(db.dataSource, db.store).problems()).isEmpty();
      setSynchronousStandbys("'*'");
      try {
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(
            SlotReport.read(db.dataSource, db.store).problems()).anySatisfy(p -> assertThat(p)
            .contains("logical relay(s) are synchronous standbys").contains("synchronous_standby_names = '*'")));
      } finally {
        setSynchronousStandbys("''");
      }
      await().atMost(Duration.ofSeconds(30)).until(() -> SlotReport.read(db.dataSource, db.store).problems().isEmpty());
    }
  }

  private void setSynchronousStandbys(String value) {
    db.exec("ALTER SYSTEM SET synchronous_standby_names = " + value);
    db.exec("SELECT pg_reload_conf()");
  }

  private void commitFlushed(HikariDataSource flushing, String payload) {
    try {
      db.commit(db.tableOutbox(), flushing, event(payload));
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private boolean checkpointWritten() throws SQLException {
    try (Connection c = db.dataSource.getConnection();
        PreparedStatement p = c.prepareStatement("SELECT count(*) FROM " + db.schema + ".txbox_slot_checkpoint"
            + " WHERE slot = ?")) {
      p.setString(1, db.replication.slot());
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getLong(1) > 0;
      }
    }
  }

  private Message event(String payload) {
    return Message.builder().destination(topic).key("k").type("Test").payload(payload.getBytes(StandardCharsets.UTF_8))
        .build();
  }

  /** Reads the topic until an event with {@code payload} arrives. */
  private void readUntil(String payload) {
    try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      List<TopicReader.Received> got = reader.readUntil(r -> r.stream().anyMatch(x -> payload.equals(text(x))),
          Duration.ofSeconds(60));
      assertThat(got).as("records on " + topic).anyMatch(x -> payload.equals(text(x)));
    }
  }

  private static String text(TopicReader.Received r) {
    return new String(r.value(), StandardCharsets.UTF_8);
  }
}
