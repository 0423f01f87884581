package io.txbox.spi;

import io.txbox.Message;

/**
 * Turns an application's event object into a message: body, type, version, destination and key.
 * {@code txbox-jackson}'s {@code EventTypes} is one; an {@link io.txbox.Outbox} built with one
 * sends event objects as they are with {@link io.txbox.Outbox#sendEvent(java.sql.Connection, Object)}.
 *
 * <pre>{@code
 * EventWriter events = EventTypes.builder(objectMapper)
 *     .type("OrderPlaced", 3, OrderPlaced.class, "orders", OrderPlaced::sku)
 *     .build();
 * Outbox outbox = Outbox.builder(store).events(events).build();
 * outbox.sendEvent(tx, new OrderPlaced(...));
 * }</pre>
 */
@FunctionalInterface
public interface EventWriter {

  /**
   * {@code event} as a message.
   *
   * @throws IllegalArgumentException when the event's class is unknown to this writer, or it
   *     cannot be written; the message names the class and the fix
   */
  Message toMessage(Object event);
}
