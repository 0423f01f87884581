package io.txbox;

import io.txbox.spi.CurrentTransaction;
import io.txbox.spi.OutboxStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;

/**
 * Writes events into the outbox log inside the caller's database transaction.
 *
 * <p>The events become visible to the relay when, and only if, the caller commits; a rollback
 * sends nothing. {@code Outbox} never commits, never opens a connection or a transaction of its
 * own, and never talks to a broker.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.create(PostgresOutboxStore.builder(dataSource).build());
 *
 * try (Connection tx = dataSource.getConnection()) {
 *   tx.setAutoCommit(false);
 *   insertOrder(tx, order);
 *   outbox.send(tx, Message.builder().type("OrderPlaced").destination("orders")
 *       .key(order.id()).payload(json, "application/json").build());
 *   tx.commit();
 * }
 * }</pre>
 *
 * <p>Where a framework manages the transactions, an outbox created with its
 * {@link CurrentTransaction} joins the transaction the caller is in, and {@link #send(Message)}
 * needs no connection; the txbox Spring Boot starter builds such an outbox.
 *
 * <p>Thread-safe; one instance serves the whole application.
 */
public final class Outbox {
  private static final CurrentTransaction NO_CURRENT_TRANSACTION = () -> {
    throw new IllegalStateException(
        "Outbox.send(message) needs to know the caller's transaction, and this outbox was created"
            + " without a CurrentTransaction: call send(connection, message) with your open"
            + " transaction, or create the outbox with Outbox.create(store, currentTransaction)");
  };

  private final OutboxStore store;
  private final CurrentTransaction currentTransaction;

  private Outbox(OutboxStore store, CurrentTransaction currentTransaction) {
    this.store = store;
    this.currentTransaction = currentTransaction;
  }

  /** An outbox that writes to {@code store}, in the transaction passed to each send. */
  public static Outbox create(OutboxStore store) {
    return create(store, NO_CURRENT_TRANSACTION);
  }

  /**
   * An outbox that writes to {@code store}; {@link #send(Message)} writes in the transaction
   * {@code currentTransaction} names.
   */
  public static Outbox create(OutboxStore store, CurrentTransaction currentTransaction) {
    return new Outbox(
        Objects.requireNonNull(store, "store must not be null"),
        Objects.requireNonNull(currentTransaction, "currentTransaction must not be null"));
  }

  /**
   * Adds one event to the transaction the caller is in, as the outbox's
   * {@link CurrentTransaction} knows it.
   *
   * @throws IllegalStateException when the caller is in no transaction
   */
  public void send(Message message) throws SQLException {
    send(List.of(message));
  }

  /** Adds the events, in this order, to the transaction the caller is in. */
  public void send(List<Message> messages) throws SQLException {
    Objects.requireNonNull(messages, "messages must not be null");
    send(currentTransaction.connection(), messages);
  }

  /** Adds one event to the caller's open transaction. */
  public void send(Connection transaction, Message message) throws SQLException {
    send(transaction, List.of(message));
  }

  /** Adds the events, in this order, to the caller's open transaction. */
  public void send(Connection transaction, List<Message> messages) throws SQLException {
    Objects.requireNonNull(transaction, "transaction must not be null");
    Objects.requireNonNull(messages, "messages must not be null");
    if (transaction.getAutoCommit()) {
      throw new IllegalStateException(
          "Outbox.send needs the caller's open transaction, but the connection is in auto-commit"
              + " mode: call connection.setAutoCommit(false) before writing, and commit after");
    }
    if (!messages.isEmpty()) {
      store.append(transaction, messages);
    }
  }
}
