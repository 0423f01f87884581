package io.txbox.spring;

import io.txbox.Message;

/**
 * What an {@link InboxListener} does with a message, inside the Spring transaction in which the
 * inbox records it: {@code JdbcTemplate}, JPA repositories and {@code @Transactional} services
 * called here join that transaction, so the side effects commit together with the record that
 * the message was processed, or not at all.
 *
 * <pre>{@code
 * MessageHandler reserve = (message, idempotencyKey) -> {
 *   jdbc.update("UPDATE stock SET reserved = reserved + 1 WHERE sku = ?", skuOf(message));
 *   payments.capture(orderOf(message), idempotencyKey); // an external call, deduplicated by the key
 * };
 * }</pre>
 */
@FunctionalInterface
public interface MessageHandler {

  /**
   * Processes one message. Throwing rolls the transaction back: nothing is recorded, and the
   * message is retried.
   *
   * @param message the message
   * @param idempotencyKey the same on every delivery of this message to this consumer, for calls
   *     to external systems that deduplicate by key
   */
  void handle(Message message, String idempotencyKey) throws Exception;
}
