package io.txbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.testkit.RabbitServer;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The relay to RabbitMQ and back through the subscriber, against the machine's RabbitMQ. */
class RelayToRabbitTest {
  private final String exchange = "orders-" + UUID.randomUUID().toString().substring(0, 8);
  private final String queue = exchange + ".inventory";
  private TestDatabase db;
  private PostgresOutboxStore store;
  private Inbox inbox;

  @BeforeEach
  void setUp() throws Exception {
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(8).build();
    store.migrate();
    inbox = Inbox.create(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build());
    try (Connection c = connect(); Channel ch = c.createChannel()) {
      ch.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, false, true, null);
      ch.queueDeclare(queue, false, false, true, Map.of("x-single-active-consumer", true));
      for (int k = 0; k < 7; k++) {
        ch.queueBind(queue, exchange, "order-" + k); // and nothing for any other key
      }
    }
  }

  @AfterEach
  void tearDown() throws Exception {
    try (Connection c = connect(); Channel ch = c.createChannel()) {
      ch.queueDelete(queue);
      ch.exchangeDelete(exchange);
    }
    db.close();
  }

  @Test
  void theRelayDeliversEveryEventOnceInOrderPerKeyThroughTheSubscriber() throws Exception {
    Outbox outbox = Outbox.create(store.writer());
    List<Message> written = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      Message m = Message.builder().type("OrderPlaced").destination(exchange).key("order-" + (i % 7))
          .payload(("order-" + (i % 7) + ":" + i).getBytes(StandardCharsets.UTF_8)).build();
      try (java.sql.Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        outbox.send(c, m);
        c.commit();
      }
      written.add(m);
    }
    Map<String, List<String>> received = new ConcurrentHashMap<>();

    try (Relay relay = Relay.builder(store.relay(), RabbitPublisher.builder().uri(RabbitServer.MACHINE_URI).build())
            .idleInterval(Duration.ofMillis(20)).build().start();
        RabbitSubscriber subscriber = RabbitSubscriber.builder(inbox, "inventory", (tx, m, key) ->
                received.computeIfAbsent(m.key(), k -> new CopyOnWriteArrayList<>())
                    .add(new String(m.payload(), StandardCharsets.UTF_8)))
            .uri(RabbitServer.MACHINE_URI).queue(queue).concurrency(4).build().start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> subscriber.processed() == written.size());
      assertThat(received).isEqualTo(byKey(written));
      assertThat(subscriber.duplicates()).isZero();
    }
  }

  @Test
  void aMessageNoQueueTakesIsAPermanentFailureNotASilentDrop() {
    Message routed = Message.builder().type("OrderPlaced").destination(exchange).key("order-1").payload(new byte[1]).build();
    Message unroutable = Message.builder().type("OrderPlaced").destination(exchange).key("refund-1").payload(new byte[1]).build();
    try (RabbitPublisher publisher = RabbitPublisher.builder().uri(RabbitServer.MACHINE_URI).build()) {
      PublishResult result = publisher.publish(List.of(routed, unroutable, routed));

      assertThat(result.failed(0)).isFalse();
      assertThat(result.failure(1)).isInstanceOf(PermanentPublishException.class)
          .hasMessageContaining("no queue takes messages from exchange '" + exchange + "' with routing key 'refund-1'");
      assertThat(result.failed(2)).isFalse();
    }
  }

  @Test
  void aUriWhoseHostCannotBeReadIsRefusedNotTakenForLocalhost() {
    assertThatThrownBy(() -> RabbitPublisher.builder().uri("amqp://app:p@ss99@rabbit.example:5672/prod").build())
        .hasMessageContaining("its user name or password holds '@': write each as %40")
        .hasMessageContaining("was 'amqp://***@rabbit.example:5672/prod'").hasMessageNotContaining("ss99");
    assertThatThrownBy(() -> RabbitPublisher.builder().uri("amqp://app:pw@rabbit.example:56x2").build())
        .hasMessageContaining("its host and port cannot be read: the port must be a number");
    assertThatCode(() -> RabbitPublisher.builder().uri("amqp://app:p%40ss99@rabbit.example:5672/prod").build().close())
        .as("the password percent-encoded").doesNotThrowAnyException();
  }

  @Test
  void badSettingsAreRefusedWithTheSettingsName() {
    assertThatThrownBy(() -> RabbitPublisher.builder().build()).hasMessageContaining("uri must be set");
    assertThatThrownBy(() -> RabbitPublisher.builder().uri("http://secret:pw@h").build())
        .hasMessageContaining("uri must be an amqp:// or amqps:// URI").hasMessageNotContaining("pw");
    assertThatThrownBy(() -> RabbitPublisher.builder().uri(RabbitServer.MACHINE_URI).maxMessageSize(0).build())
        .hasMessageContaining("maxMessageSize must be >= 1");
    assertThatThrownBy(() -> RabbitSubscriber.builder(inbox, "billing", (tx, m, k) -> { }).uri(RabbitServer.MACHINE_URI).build())
        .hasMessageContaining("queue must name the queue");
    assertThatThrownBy(() -> RabbitSubscriber.builder(inbox, "billing", (tx, m, k) -> { })
        .uri(RabbitServer.MACHINE_URI).queue(queue).prefetch(0).build())
        .hasMessageContaining("prefetch must be >= 1 and <= 10000, was 0");
  }

  @Test
  void aSubscriberOfAQueueThatDoesNotExistFailsToStartAndSaysWhich() {
    RabbitSubscriber subscriber = RabbitSubscriber.builder(inbox, "billing", (tx, m, k) -> { })
        .uri(RabbitServer.MACHINE_URI).queue("no-such-queue").build();
    assertThatThrownBy(subscriber::start).hasMessageContaining("cannot consume queue 'no-such-queue'")
        .hasMessageContaining("NOT_FOUND");
  }

  private static Connection connect() throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(RabbitServer.MACHINE_URI);
    return factory.newConnection();
  }

  private static Map<String, List<String>> byKey(List<Message> messages) {
    Map<String, List<String>> byKey = new LinkedHashMap<>();
    for (Message m : messages) {
      byKey.computeIfAbsent(m.key(), k -> new ArrayList<>()).add(new String(m.payload(), StandardCharsets.UTF_8));
    }
    return byKey;
  }
}
