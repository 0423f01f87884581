package io.txbox.rabbitmq;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.InboxStore;
import io.txbox.spi.Publisher;
import io.txbox.spi.Subscriber;
import io.txbox.testkit.RabbitServer;
import io.txbox.testkit.StoppableBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TransportContract;
import java.time.Duration;
import java.util.Map;

/**
 * RabbitMQ's publisher and subscriber held to the transport contract, against the machine's
 * RabbitMQ and, for the outage, a node of the test's own.
 */
class RabbitContractTest extends TransportContract {

  @Override
  protected String sharedBroker() {
    return RabbitServer.MACHINE_URI;
  }

  @Override
  protected StoppableBroker startOwnBroker() {
    return RabbitServer.start();
  }

  /**
   * A durable fanout exchange named after the destination, and one durable queue of the same name
   * bound to it, with a single active consumer.
   */
  @Override
  protected String createDestination(String broker, String name) throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(broker);
    try (Connection c = factory.newConnection(); Channel ch = c.createChannel()) {
      ch.exchangeDeclare(name, BuiltinExchangeType.FANOUT, true);
      ch.queueDeclare(name, true, false, false, Map.of("x-single-active-consumer", true));
      ch.queueBind(name, name, "");
    }
    return name;
  }

  /**
   * Declares the destination again, as deployments do on boot (a definitions file, or every
   * client declaring its topology). Twice in CI, under load, a SIGKILLed RabbitMQ 3.10 node came
   * back with its durable queue but without the queue's binding, and answered every publish with
   * NO_ROUTE for the 90 s the test waited; the second time its log showed the queue recovered and no error. A
   * broker that drops its own topology in a crash is outside what this test proves about txbox;
   * declaring is idempotent, so it changes nothing when the binding survived.
   */
  @Override
  protected void brokerRestarted(String broker, String destination) throws Exception {
    createDestination(broker, destination);
  }

  @Override
  protected Publisher publisher(String broker) {
    return RabbitPublisher.builder().uri(broker).confirmTimeout(Duration.ofSeconds(3)).build();
  }

  @Override
  protected Subscriber subscriber(String broker, String destination, Inbox inbox, String consumer, InboxHandler handler,
      RetryPolicy retryPolicy, WhenExhausted whenExhausted) {
    return RabbitSubscriber.builder(inbox, consumer, handler)
        .uri(broker)
        .queue(destination)
        .retryPolicy(retryPolicy)
        .whenExhausted(whenExhausted)
        .build();
  }

  @Override
  protected int payloadLimit() {
    return RabbitPublisher.DEFAULT_MAX_MESSAGE_SIZE;
  }

  @Override
  protected void migrate(TestDatabase db) {
    PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build().migrate();
  }

  @Override
  protected InboxStore inboxStore(String schema) {
    return PostgresInboxStore.builder().schema(schema).build();
  }
}
