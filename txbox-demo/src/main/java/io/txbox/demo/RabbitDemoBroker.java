package io.txbox.demo;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.txbox.testkit.RabbitServer;
import java.io.PrintStream;
import java.util.List;
import java.util.Map;

/**
 * RabbitMQ: a durable fanout exchange and one durable queue with a single active consumer, on the
 * given broker or on a node of the demo's own. Every inventory process consumes the queue; the
 * broker delivers to one at a time, and another takes over when it dies.
 */
final class RabbitDemoBroker implements DemoBroker {
  private final RabbitServer own;
  private final String uri;
  private final String exchange;
  private final String queue;
  private final Connection connection;

  RabbitDemoBroker(String uri, String run, PrintStream out) throws Exception {
    if (uri == null) {
      out.println("starting a RabbitMQ node (the machine's installation; --rabbitmq-uri to use yours)...");
      own = RabbitServer.start();
      uri = own.address();
    } else {
      own = null;
    }
    this.uri = uri;
    this.exchange = "orders-" + run;
    this.queue = exchange + ".inventory";
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(uri);
    this.connection = factory.newConnection("txbox-demo");
    try (Channel ch = connection.createChannel()) {
      ch.exchangeDeclare(exchange, BuiltinExchangeType.FANOUT, true);
      ch.queueDeclare(queue, true, false, false, Map.of("x-single-active-consumer", true));
      ch.queueBind(queue, exchange, "");
    }
  }

  @Override
  public String name() {
    return "RabbitMQ";
  }

  @Override
  public String destination() {
    return exchange;
  }

  @Override
  public List<String> relayArgs() {
    return List.of("--broker", "rabbitmq", "--rabbitmq-uri", uri);
  }

  @Override
  public List<String> inventoryArgs(String member) {
    return List.of("--broker", "rabbitmq", "--rabbitmq-uri", uri, "--queue", queue);
  }

  @Override
  public long held() {
    try (Channel ch = connection.createChannel()) {
      return ch.queueDeclarePassive(queue).getMessageCount();
    } catch (Exception e) {
      throw new IllegalStateException("cannot read the queue's length: " + e, e);
    }
  }

  @Override
  public String heldLabel() {
    return "queued in RabbitMQ";
  }

  @Override
  public void close() throws Exception {
    try (Channel ch = connection.createChannel()) {
      ch.queueDelete(queue);
      ch.exchangeDelete(exchange);
    } finally {
      connection.close();
      if (own != null) {
        own.close();
      }
    }
  }
}
