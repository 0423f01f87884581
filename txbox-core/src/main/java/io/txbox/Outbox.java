package io.txbox;

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
 * <p>Thread-safe; one instance serves the whole application.
 */
public final class Outbox {
  private final OutboxStore store;

  private Outbox(OutboxStore store) {
    this.store = store;
  }

  /** An outbox that writes to {@code store}. */
  public static Outbox create(OutboxStore store) {
    return new Outbox(Objects.requireNonNull(store, "store must not be null"));
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
