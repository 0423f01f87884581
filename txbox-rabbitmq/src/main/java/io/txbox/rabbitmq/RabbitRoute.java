package io.txbox.rabbitmq;

import java.util.Objects;

/**
 * Where a message goes in RabbitMQ: an exchange and the routing key it is published with.
 *
 * <pre>{@code
 * RabbitPublisher.builder().router(m -> new RabbitRoute("events", m.type() + "." + m.key()))
 * }</pre>
 *
 * @param exchange the exchange; {@code ""} is the default exchange, which routes to the queue
 *     named by the routing key
 * @param routingKey the routing key; for a consistent-hash exchange, the message key
 */
public record RabbitRoute(String exchange, String routingKey) {
  /** Checks both are present. */
  public RabbitRoute {
    Objects.requireNonNull(exchange, "exchange must not be null (\"\" is the default exchange)");
    Objects.requireNonNull(routingKey, "routingKey must not be null");
  }
}
