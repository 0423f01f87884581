package io.txbox;

import io.txbox.spi.InboxStore;
import io.txbox.spi.Rollback;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Turns at-least-once delivery into effectively-once processing: each message is processed by a
 * consumer once, however often the broker delivers it.
 *
 * <p>{@link #receive} opens a transaction, records {@code (consumer, message id)}, runs the handler
 * on the same connection, and commits; only then does it return, so the caller acknowledges the
 * broker after the side effects are durable. A message the consumer already processed is a
 * {@link Receipt#DUPLICATE}: the handler does not run, and the caller acknowledges it too.
 * Deduplication is per consumer: two consumers of one message each process it once.
 *
 * <pre>{@code
 * Inbox inbox = Inbox.create(dataSource, PostgresInboxStore.builder(dataSource).build());
 * Receipt receipt = inbox.receive("inventory", message, (tx, m, key) -> reserveStock(tx, m));
 * consumer.acknowledge(record); // after receive returned, processed or duplicate
 * }</pre>
 *
 * <p>Thread-safe; one instance serves every consumer of the application.
 */
public final class Inbox {
  private static final Pattern CONSUMER = Pattern.compile("[A-Za-z0-9._-]{1,100}");

  /** What {@link #receive} did with a message. */
  public enum Receipt {
    /** The handler ran and its transaction committed. */
    PROCESSED,
    /** The consumer had processed this message before; the handler did not run. */
    DUPLICATE
  }

  private final DataSource dataSource;
  private final InboxStore store;

  private Inbox(DataSource dataSource, InboxStore store) {
    this.dataSource = dataSource;
    this.store = store;
  }

  /** An inbox that opens its transactions on {@code dataSource} and records in {@code store}. */
  public static Inbox create(DataSource dataSource, InboxStore store) {
    return new Inbox(
        Objects.requireNonNull(dataSource, "dataSource must not be null"),
        Objects.requireNonNull(store, "store must not be null"));
  }

  /**
   * Processes {@code message} for {@code consumer} once: records it and runs the handler in one
   * transaction, then commits. When the handler throws, the transaction is rolled back, nothing
   * is recorded, and the handler's exception is thrown wrapped in a {@link HandlerException}.
   *
   * @param consumer the consumer's name, 1-100 of {@code A-Z a-z 0-9 . _ -}
   * @throws SQLException when the database fails; nothing was recorded
   */
  public Receipt receive(String consumer, Message message, InboxHandler handler) throws SQLException {
    requireConsumer(consumer);
    Objects.requireNonNull(message, "message must not be null");
    Objects.requireNonNull(handler, "handler must not be null");
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      try {
        if (!store.record(tx, consumer, message.id())) {
          tx.rollback();
          return Receipt.DUPLICATE;
        }
        handler.handle(tx, message, idempotencyKey(consumer, message.id()));
        tx.commit();
        return Receipt.PROCESSED;
      } catch (SQLException | RuntimeException e) {
        Rollback.after(tx, e);
        throw e;
      } catch (Exception e) {
        Rollback.after(tx, e);
        throw new HandlerException(consumer, message, e);
      }
    }
  }

  /**
   * The key a handler passes to external systems: the same for a consumer and a message on every
   * delivery, different between consumers. A name-based UUID of both.
   */
  public static String idempotencyKey(String consumer, UUID messageId) {
    return UUID.nameUUIDFromBytes((consumer + "/" + messageId).getBytes(StandardCharsets.UTF_8)).toString();
  }

  private static void requireConsumer(String consumer) {
    if (consumer == null || !CONSUMER.matcher(consumer).matches()) {
      throw new IllegalArgumentException(
          "consumer must be 1 to 100 characters of A-Z a-z 0-9 . _ -, was '" + consumer + "'");
    }
  }

  /**
   * A handler failed; its transaction was rolled back and nothing was recorded, so the message is
   * processed again when the broker redelivers it.
   *
   * <pre>{@code
   * try {
   *   inbox.receive("inventory", message, handler);
   * } catch (Inbox.HandlerException e) {
   *   // do not acknowledge: the broker delivers the message again
   * }
   * }</pre>
   */
  public static final class HandlerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    HandlerException(String consumer, Message message, Exception cause) {
      super("consumer " + consumer + " failed on message " + message.id() + " (" + message.type() + "): "
          + cause.getMessage(), cause);
    }
  }
}
