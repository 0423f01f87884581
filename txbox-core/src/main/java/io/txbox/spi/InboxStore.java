package io.txbox.spi;

import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.ParkedMessage;
import io.txbox.Receipt;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * Where a consumer records the ids of the messages it has processed, in the same transaction as
 * the processing itself, and keeps the messages it dead-lettered, each key's in order.
 *
 * <pre>{@code
 * InboxStore store = PostgresInboxStore.builder().build();
 * Inbox inbox = Inbox.create(dataSource, store);
 * }</pre>
 *
 * <p><b>Parking.</b> A message whose handler failed for good is stored as dead and parks its key
 * ({@link #queueKey}); while the key is parked, {@link #admit} stores every later message of the
 * key behind it instead of letting the handler run. Retrying takes the parked messages out one by
 * one, in order ({@link #nextParked}); the key is free again when none is left. Parking a message
 * and finding the key empty exclude each other, so no message is left behind a key that was just
 * freed.
 */
public interface InboxStore {

  /** Longest error text kept with a dead message. */
  int MAX_ERROR_LENGTH = 2000;

  /**
   * An error as a store keeps it with a dead message: its type and message, at most
   * {@value #MAX_ERROR_LENGTH} characters.
   */
  static String describe(Throwable error) {
    String text = error.toString();
    return text.length() <= MAX_ERROR_LENGTH ? text : text.substring(0, MAX_ERROR_LENGTH);
  }

  /** What {@link #admit} did with a message. */
  enum Admission {
    /** Recorded: the handler runs in this transaction. */
    NEW,
    /** The consumer had it before: nothing to do. */
    DUPLICATE,
    /** Its key is parked: stored behind the key's dead message, the handler does not run. */
    PARKED;

    /** What the caller is told once the transaction committed. */
    public Receipt receipt() {
      return switch (this) {
        case NEW -> Receipt.PROCESSED;
        case DUPLICATE -> Receipt.DUPLICATE;
        case PARKED -> Receipt.PARKED;
      };
    }
  }

  /**
   * The key a message is ordered and parked under: its key, or one of its own when it has none,
   * since a message without a key is ordered with nothing.
   */
  static String queueKey(Message message) {
    return message.key() != null ? message.key() : "txbox-unkeyed:" + message.id();
  }

  /**
   * Records that {@code consumer} processes {@code messageId}, inside the caller's transaction.
   *
   * @return {@code true} when this is the first time; {@code false} when the consumer has
   *     recorded this message before, which makes it a duplicate
   */
  boolean record(Connection transaction, String consumer, UUID messageId) throws SQLException;

  /**
   * Admits {@code message} for {@code consumer} inside the caller's transaction: records it
   * ({@link Admission#NEW}), recognises a duplicate, or, while its key is parked, stores it
   * behind the key's dead message ({@link Admission#PARKED}).
   */
  Admission admit(Connection transaction, String consumer, Message message) throws SQLException;

  /**
   * {@link #admit} for each of {@code messages}, in order, inside the caller's transaction; a
   * store may do it in fewer statements. A message given twice is {@link Admission#DUPLICATE} the
   * second time.
   *
   * @return one admission per message, in the order given
   */
  default List<Admission> admitAll(Connection transaction, String consumer, List<Message> messages)
      throws SQLException {
    List<Admission> admissions = new ArrayList<>(messages.size());
    for (Message m : messages) {
      admissions.add(admit(transaction, consumer, m));
    }
    return admissions;
  }

  /**
   * Stores {@code message} as dead after {@code attempts} failed attempts ending in {@code error},
   * and parks its key.
   *
   * @return false when the consumer had this message already (processed, parked or dead)
   */
  boolean deadLetter(Connection transaction, String consumer, Message message, int attempts, String error)
      throws SQLException;

  /** Up to {@code limit} parked messages of {@code consumer}: by key, each key's in order. */
  List<ParkedMessage> parked(Connection transaction, String consumer, int limit) throws SQLException;

  /**
   * Locks parked key {@code queueKey} until the transaction ends and returns its first message;
   * empty, and the key no longer parked, when it has none left.
   */
  Optional<ParkedMessage> nextParked(Connection transaction, String consumer, String queueKey) throws SQLException;

  /** The parked message was processed: it is forgotten and recorded as processed. */
  void processedParked(Connection transaction, String consumer, UUID messageId) throws SQLException;

  /** The parked message failed again: it is dead now, with one more attempt and {@code error}. */
  void failedParked(Connection transaction, String consumer, UUID messageId, String error) throws SQLException;

  /**
   * Drops every parked message of {@code queueKey} (each stays recorded, so redeliveries are
   * duplicates) and frees the key.
   *
   * @return how many messages were dropped
   */
  int discardParked(Connection transaction, String consumer, String queueKey) throws SQLException;

  /**
   * Marks parked key {@code queueKey} as to be retried by the running consumer, which has the
   * handler ({@code txbox dead-letters retry --consumer}).
   *
   * @return false when the key is not parked
   */
  boolean requestRetry(Connection transaction, String consumer, String queueKey, String operator) throws SQLException;

  /**
   * Takes up to {@code limit} of {@code consumer}'s retry requests, oldest first: each is cleared
   * and returned to one caller only. A key being retried right now is left for a later call.
   */
  List<String> takeRetryRequests(Connection transaction, String consumer, int limit) throws SQLException;
}
