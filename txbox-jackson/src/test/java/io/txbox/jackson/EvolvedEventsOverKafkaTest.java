package io.txbox.jackson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.ParkedMessage;
import io.txbox.Relay;
import io.txbox.jdbc.Replay;
import io.txbox.jdbc.Scope;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.kafka.KafkaSubscriber;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Events written by three versions of the order service, still in the log and on the topic, are
 * handled by today's consumer as version 3, in order per key, through real PostgreSQL and Kafka;
 * a version from the future is dead-lettered with both versions named while other keys flow; and
 * the log replayed into a sandbox topic brings a sandbox consumer to the same state.
 */
class EvolvedEventsOverKafkaTest {
  private final KafkaBroker kafka = KafkaBroker.shared();
  private final TestDatabase db = TestDatabase.create();
  private final String topic = "evolved-orders-" + UUID.randomUUID();
  private final PostgresOutboxStore store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build();
  private final Inbox inbox = Inbox.create(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build());
  private final EventTypes types = OrderPlaced.types(new ObjectMapper(), topic);
  private final Outbox outbox = Outbox.builder(store.writer()).events(types).build();

  @AfterEach
  void dropSchema() {
    db.close();
  }

  @Test
  void oldVersionsAreHandledAsTheCurrentOneInOrderAndAFutureVersionIsDeadLettered() throws Exception {
    writeThreeVersionsAndAFutureOne();
    try (Relay relay = relay(); KafkaSubscriber live = subscriber("inventory", topic, "handled")) {
      await().atMost(Duration.ofSeconds(60)).until(() -> handled("handled").size() == 4
          && inbox.parked("inventory", 10).size() == 2);
    }

    assertThat(handled("handled")).containsExactly(
        "o-1 c-1 sku-1 EUR 1000 v1", "o-3 c-1 sku-1 EUR 99 v2", "o-4 c-1 sku-1 EUR 300 v3", "o-2 c-2 sku-2 USD 725 v2");
    List<ParkedMessage> parked = inbox.parked("inventory", 10);
    assertThat(parked).extracting(p -> p.message().version()).containsExactly(4, 3);
    assertThat(parked.get(0).dead()).isTrue();
    assertThat(parked.get(0).attempts()).as("permanent: one attempt").isEqualTo(1);
    assertThat(parked.get(0).lastError()).contains("OrderPlaced version 4, newer than version 3 that this consumer knows");
  }

  @Test
  void aReplayIntoASandboxThroughTheUpcastersReachesTheStateTheLiveConsumerReached() throws Exception {
    writeThreeVersionsAndAFutureOne();
    try (Relay relay = relay(); KafkaSubscriber live = subscriber("inventory", topic, "handled")) {
      await().atMost(Duration.ofSeconds(60)).until(() -> handled("handled").size() == 4);
    }
    String sandbox = topic + ".sandbox";
    kafka.createTopic(sandbox, 3);

    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build()) {
      Replay.Result replayed = store.operator().replay().replay(Replay.Request.of(
          Scope.ALL.withSubscription("default"), "test").withToDestination(sandbox), publisher, n -> { });
      assertThat(replayed.published()).isEqualTo(6);
    }
    try (KafkaSubscriber trial = subscriber("inventory-sandbox", sandbox, "handled_sandbox")) {
      await().atMost(Duration.ofSeconds(60)).until(() -> handled("handled_sandbox").size() == 4
          && inbox.parked("inventory-sandbox", 10).size() == 2);
    }
    assertThat(handled("handled_sandbox")).isEqualTo(handled("handled"));
  }

  private void writeThreeVersionsAndAFutureOne() throws SQLException {
    store.migrate();
    kafka.createTopic(topic, 3);
    for (String table : List.of("handled", "handled_sandbox")) {
      execute("CREATE TABLE " + db.schema() + "." + table + " (n bigserial, order_id text, customer_id text, sku text,"
          + " currency text, amount_minor bigint, written_version int)");
    }
    send(old(1, "sku-1", "{\"orderId\":\"o-1\",\"customer\":\"c-1\",\"sku\":\"sku-1\",\"quantity\":1,\"amount\":\"10.00\"}"));
    send(old(2, "sku-2", "{\"orderId\":\"o-2\",\"customerId\":\"c-2\",\"sku\":\"sku-2\",\"quantity\":1,"
        + "\"currency\":\"USD\",\"amount\":\"7.25\"}"));
    send(old(4, "sku-9", "{\"orderId\":\"o-9\",\"totally\":\"new\"}"));
    send(old(2, "sku-1", "{\"orderId\":\"o-3\",\"customerId\":\"c-1\",\"sku\":\"sku-1\",\"quantity\":2,"
        + "\"currency\":\"EUR\",\"amount\":\"0.99\"}"));
    sendEvent(new OrderPlaced("o-4", "c-1", "sku-1", 3, "EUR", 300)); // as today's service writes them
    sendEvent(new OrderPlaced("o-5", "c-9", "sku-9", 1, "EUR", 100));
  }

  private Relay relay() {
    return Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .idleInterval(Duration.ofMillis(20)).build().start();
  }

  /** A consumer that records each order, as version 3, in {@code table}. */
  private KafkaSubscriber subscriber(String consumer, String from, String table) {
    EventHandlers handlers = EventHandlers.builder(types).on(OrderPlaced.class, (tx, order, meta) -> {
      try (PreparedStatement p = tx.prepareStatement("INSERT INTO " + db.schema() + "." + table + " (order_id,"
          + " customer_id, sku, currency, amount_minor, written_version) VALUES (?, ?, ?, ?, ?, ?)")) {
        p.setString(1, order.orderId());
        p.setString(2, order.customerId());
        p.setString(3, order.sku());
        p.setString(4, order.currency());
        p.setLong(5, order.amountMinor());
        p.setInt(6, meta.writtenVersion());
        p.executeUpdate();
      }
    }).build();
    return KafkaSubscriber.builder(inbox, consumer, handlers).bootstrapServers(kafka.bootstrapServers()).topics(from)
        .build().start();
  }

  /** An event as an older (or, for version 4, a newer) order service wrote it. */
  private Message old(int version, String sku, String json) {
    return Message.builder().type("OrderPlaced").version(version).destination(topic).key(sku)
        .payload(json.getBytes(StandardCharsets.UTF_8), "application/json").build();
  }

  private void send(Message m) throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.send(c, m);
      c.commit();
    }
  }

  private void sendEvent(OrderPlaced event) throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.sendEvent(c, event);
      c.commit();
    }
  }

  /** Handled orders in handling order, sku by sku. */
  private List<String> handled(String table) throws SQLException {
    List<String> rows = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
        "SELECT order_id, customer_id, sku, currency, amount_minor, written_version FROM " + db.schema()
            + "." + table + " ORDER BY sku, n")) {
      while (rs.next()) {
        rows.add(rs.getString(1) + " " + rs.getString(2) + " " + rs.getString(3) + " " + rs.getString(4) + " "
            + rs.getLong(5) + " v" + rs.getInt(6));
      }
    }
    return rows;
  }

  private void execute(String sql) throws SQLException {
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
