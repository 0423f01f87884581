package io.txbox.jackson;

import java.sql.Connection;

/**
 * Handles one event type in its current shape, inside the inbox's transaction.
 *
 * <pre>{@code
 * TypedHandler<OrderPlaced> reserve = (tx, order, meta) -> stock.reserve(tx, order.sku(), order.quantity());
 * }</pre>
 *
 * @param <T> the event's class
 */
@FunctionalInterface
public interface TypedHandler<T> {

  /** Handles {@code event}; throwing rolls the transaction back, as for any inbox handler. */
  void handle(Connection transaction, T event, EventMetadata metadata) throws Exception;
}
