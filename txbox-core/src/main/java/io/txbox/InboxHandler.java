package io.txbox;

import java.sql.Connection;

/**
 * What a consumer does with a message, on the inbox's connection and inside its transaction: the
 * side effects commit together with the record that the message was processed, or not at all.
 *
 * <pre>{@code
 * InboxHandler reserveStock = (tx, message, idempotencyKey) -> {
 *   try (PreparedStatement p = tx.prepareStatement("UPDATE stock SET reserved = reserved + 1 WHERE sku = ?")) {
 *     p.setString(1, skuOf(message));
 *     p.executeUpdate();
 *   }
 *   payments.capture(orderOf(message), idempotencyKey); // an external call, deduplicated by the key
 * };
 * }</pre>
 */
@FunctionalInterface
public interface InboxHandler {

  /**
   * Processes one message. Throwing rolls the transaction back: nothing is recorded, and the
   * broker delivers the message again.
   *
   * @param transaction the inbox's open transaction; never commit or roll it back here
   * @param message the message
   * @param idempotencyKey a key derived from the consumer and the message id, the same on every
   *     delivery, for calls to external systems that deduplicate by key
   */
  void handle(Connection transaction, Message message, String idempotencyKey) throws Exception;
}
