package io.txbox.bench;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.MessageProperties;
import io.txbox.rabbitmq.RabbitPublisher;
import io.txbox.rabbitmq.RabbitMessages;
import io.txbox.spi.Publisher;
import io.txbox.testkit.RabbitServer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * A RabbitMQ node of its own with a durable fanout exchange and queue per destination, and
 * amqp-client publishing persistent messages with confirms (5000 awaited at a time, as the relay's
 * batch) as the reference.
 */
final class RabbitBench implements BenchBroker {
  private static final int WINDOW = 5000;
  private final RabbitServer rabbit = RabbitServer.start();
  private final ConnectionFactory factory = new ConnectionFactory();

  RabbitBench() throws Exception {
    factory.setUri(rabbit.address());
    try (Connection c = factory.newConnection(); Channel ch = c.createChannel()) {
      for (String name : new String[] {RELAY_DESTINATION, "bench-reference"}) {
        ch.exchangeDeclare(name, BuiltinExchangeType.FANOUT, true);
        ch.queueDeclare(name, true, false, false, null);
        ch.queueBind(name, name, "");
      }
    }
  }

  @Override
  public String reference() {
    return "amqp-client, persistent, publisher confirms, 300 B, " + WINDOW + " unconfirmed at a time";
  }

  @Override
  public Publisher publisher() {
    return RabbitPublisher.builder().uri(rabbit.address()).build();
  }

  @Override
  public double bareRate(int messages) throws Exception {
    return publishAll(messages, i -> MessageProperties.PERSISTENT_BASIC);
  }

  @Override
  public double bareRateWithRelayHeaders(int messages) throws Exception {
    return publishAll(messages, i -> RabbitMessages.properties(Events.orderPlaced("bench-reference", i)));
  }

  /**
   * Messages per second, persistent and confirmed, {@value #WINDOW} unconfirmed at a time. Only
   * publishing and confirming are timed; a window's properties are built before its clock starts.
   */
  private double publishAll(int messages, IntFunction<AMQP.BasicProperties> properties) throws Exception {
    byte[] payload = new byte[300];
    try (Connection c = factory.newConnection(); Channel ch = c.createChannel()) {
      ch.confirmSelect();
      long timed = 0;
      for (int sent = 0; sent < messages; sent += WINDOW) {
        List<AMQP.BasicProperties> window = new ArrayList<>(WINDOW);
        for (int i = sent; i < Math.min(messages, sent + WINDOW); i++) {
          window.add(properties.apply(i));
        }
        long start = System.nanoTime();
        for (AMQP.BasicProperties p : window) {
          ch.basicPublish("bench-reference", "", p, payload);
        }
        ch.waitForConfirmsOrDie(60_000);
        timed += System.nanoTime() - start;
      }
      return messages / (timed / 1e9);
    }
  }

  @Override
  public void close() {
    rabbit.close();
  }
}
