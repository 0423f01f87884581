package io.txbox.spi;

import io.txbox.Message;
import io.txbox.ParkedMessage;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Where an {@link io.txbox.InboxQueue} keeps received messages until its workers have processed
 * them, and how a worker finds the next message it may process.
 *
 * <pre>{@code
 * InboxQueueStore store = PostgresInboxStore.builder().build();
 * InboxQueue queue = InboxQueue.builder(dataSource, store, "billing", handler).build().start();
 * }</pre>
 *
 * <p>Every method works inside the caller's transaction and does not commit.
 */
public interface InboxQueueStore {

  /**
   * Records {@code message} for {@code consumer} and keeps it until it is processed: queued
   * ({@link InboxStore.Admission#NEW}), or, while its key is parked behind a dead message, parked
   * behind it ({@link InboxStore.Admission#PARKED}).
   *
   * @return {@link InboxStore.Admission#DUPLICATE} when the consumer has received this message
   *     before; it is not stored again
   */
  InboxStore.Admission enqueue(Connection transaction, String consumer, Message message, String queueKey, Long sequence)
      throws SQLException;

  /**
   * Finds a key whose next message may be processed now, locks the key until the transaction
   * ends, and returns that message. The next message of a key is the one with the lowest
   * sequence (then the earliest received); it may be processed when it is due and either carries
   * no sequence, is the next number, or has waited {@code gapTimeout} for the numbers before it.
   *
   * @return empty when no key has a message to process now
   */
  Optional<QueuedMessage> claim(Connection transaction, String consumer, Duration gapTimeout) throws SQLException;

  /** The claimed message was processed: forgets its body and moves its key past it. */
  void complete(Connection transaction, String consumer, QueuedMessage message) throws SQLException;

  /** The claimed message failed; it is not claimed again before {@code retryAt}. */
  void retryLater(Connection transaction, String consumer, QueuedMessage message, Instant retryAt, String error)
      throws SQLException;

  /**
   * The claimed message failed for good: it is kept as dead and parks its key; the key's queued
   * messages, and those that arrive later, are parked behind it.
   */
  void deadLetter(Connection transaction, String consumer, QueuedMessage message, String error)
      throws SQLException;

  /** Up to {@code limit} parked messages of {@code consumer}: by key, each key's in order. */
  List<ParkedMessage> parked(Connection transaction, String consumer, int limit) throws SQLException;

  /**
   * Queues the parked messages of {@code queueKey} again, in their order and with fresh attempts,
   * and frees the key.
   *
   * @return how many messages were queued again
   */
  int requeueParked(Connection transaction, String consumer, String queueKey) throws SQLException;

  /**
   * Drops every parked message of {@code queueKey} (each stays recorded, so redeliveries are
   * duplicates), moves the key past them and frees it.
   *
   * @return how many messages were dropped
   */
  int discardParked(Connection transaction, String consumer, String queueKey) throws SQLException;

  /**
   * Takes up to {@code limit} of {@code consumer}'s retry requests, oldest first: each is cleared
   * and returned to one caller only, which queues the key again ({@link #requeueParked}).
   */
  List<String> takeRetryRequests(Connection transaction, String consumer, int limit) throws SQLException;
}
