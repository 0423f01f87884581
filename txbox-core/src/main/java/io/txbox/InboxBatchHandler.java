package io.txbox;

import java.sql.Connection;
import java.util.List;

/**
 * What a consumer does with a batch of messages at once, for handlers that can do set-based work
 * (one multi-row {@code INSERT} instead of one per message): on the inbox's connection, inside its
 * transaction, with the messages of the batch that are new to the consumer, in order. Duplicates
 * and messages of parked keys are not among them.
 *
 * <pre>{@code
 * InboxBatchHandler recordOrders = (tx, messages) -> {
 *   try (PreparedStatement p = tx.prepareStatement("INSERT INTO orders (id, body) VALUES (?, ?)")) {
 *     for (Message m : messages) {
 *       p.setObject(1, m.id());
 *       p.setBytes(2, m.payload());
 *       p.addBatch();
 *     }
 *     p.executeBatch();
 *   }
 * };
 * KafkaSubscriber.builder(inbox, "orders-archive", recordOrders).bootstrapServers("kafka:9092").topics("orders").build();
 * }</pre>
 *
 * <p>When it throws, the batch is rolled back and its messages are handled again one at a time,
 * each in a list of its own, so that the retry policy and the dead letters concern the message
 * that fails and no other.
 */
@FunctionalInterface
public interface InboxBatchHandler {

  /**
   * Processes the messages. Throwing rolls the transaction back: nothing is recorded.
   *
   * @param transaction the inbox's open transaction; never commit or roll it back here
   * @param messages the batch's messages new to the consumer, in order; never empty
   */
  void handle(Connection transaction, List<Message> messages) throws Exception;

  /** This handler for one message at a time, as {@link Inbox#receive} and retries call it. */
  default InboxHandler oneAtATime() {
    return (transaction, message, idempotencyKey) -> handle(transaction, List.of(message));
  }
}
