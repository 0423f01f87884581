package io.txbox;

import io.txbox.spi.CurrentTransaction;
import io.txbox.spi.EventWriter;
import io.txbox.spi.OutboxWriter;
import io.txbox.spi.OutgoingHeaders;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
 * <p>Where a framework manages the transactions, an outbox built with its
 * {@link CurrentTransaction} joins the transaction the caller is in, and {@link #send(Message)}
 * needs no connection; the txbox Spring Boot starter builds such an outbox, with
 * {@link OutgoingHeaders} that carry the writer's trace context.
 *
 * <p>An outbox built with an {@link EventWriter} (such as {@code txbox-jackson}'s
 * {@code EventTypes}) also takes the application's event objects as they are:
 * {@code outbox.sendEvent(tx, new OrderPlaced(...))}.
 *
 * <p>Thread-safe; one instance serves the whole application.
 */
public final class Outbox {
  private static final CurrentTransaction NO_CURRENT_TRANSACTION = () -> {
    throw new IllegalStateException(
        "Outbox.send(message) needs to know the caller's transaction, and this outbox was built"
            + " without a CurrentTransaction: call send(connection, message) with your open"
            + " transaction, or build the outbox with Outbox.builder(store).currentTransaction(...)");
  };

  private static final EventWriter NO_EVENT_WRITER = event -> {
    throw new IllegalStateException("Outbox.sendEvent needs to know how to write "
        + event.getClass().getName() + " as a message, and this outbox was built without an EventWriter:"
        + " build it with Outbox.builder(store).events(eventTypes) (txbox-jackson), or send a Message");
  };

  private final OutboxWriter store;
  private final CurrentTransaction currentTransaction;
  private final OutgoingHeaders outgoingHeaders;
  private final EventWriter events;

  private Outbox(Builder b) {
    this.store = b.store;
    this.currentTransaction = b.currentTransaction;
    this.outgoingHeaders = b.outgoingHeaders;
    this.events = b.events;
  }

  /** An outbox that writes to {@code store}, in the transaction passed to each send. */
  public static Outbox create(OutboxWriter store) {
    return builder(store).build();
  }

  /** A builder for an outbox that writes to {@code store}. */
  public static Builder builder(OutboxWriter store) {
    return new Builder(Objects.requireNonNull(store, "store must not be null"));
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
      store.append(transaction, withOutgoingHeaders(messages));
    }
  }

  /**
   * Adds the application's {@code event} to the transaction the caller is in, written as a
   * message by the outbox's {@link EventWriter}.
   *
   * @throws IllegalStateException when the caller is in no transaction, or the outbox has no
   *     event writer
   * @throws IllegalArgumentException when the writer does not know the event's class
   */
  public void sendEvent(Object event) throws SQLException {
    send(events.toMessage(Objects.requireNonNull(event, "event must not be null")));
  }

  /** Adds the application's {@code event} to the caller's open transaction; as {@link #sendEvent(Object)}. */
  public void sendEvent(Connection transaction, Object event) throws SQLException {
    send(transaction, events.toMessage(Objects.requireNonNull(event, "event must not be null")));
  }

  private List<Message> withOutgoingHeaders(List<Message> messages) {
    Map<String, String> outgoing = outgoingHeaders.current();
    if (outgoing.isEmpty()) {
      return messages;
    }
    List<Message> added = new ArrayList<>(messages.size());
    for (Message m : messages) {
      Map<String, String> missing = new HashMap<>(outgoing);
      missing.keySet().removeAll(m.headers().keySet()); // what the caller set stays
      added.add(m.withHeaders(missing));
    }
    return added;
  }

  /** Builds an {@link Outbox}. */
  public static final class Builder {
    private final OutboxWriter store;
    private CurrentTransaction currentTransaction = NO_CURRENT_TRANSACTION;
    private OutgoingHeaders outgoingHeaders = OutgoingHeaders.NONE;
    private EventWriter events = NO_EVENT_WRITER;

    private Builder(OutboxWriter store) {
      this.store = store;
    }

    /**
     * Where {@link Outbox#send(Message)} finds the caller's transaction. Default none: only
     * {@code send(connection, message)} works.
     */
    public Builder currentTransaction(CurrentTransaction currentTransaction) {
      this.currentTransaction = Objects.requireNonNull(currentTransaction, "currentTransaction must not be null");
      return this;
    }

    /** Headers added to every message written, such as trace context. Default none. */
    public Builder headers(OutgoingHeaders outgoingHeaders) {
      this.outgoingHeaders = Objects.requireNonNull(outgoingHeaders, "outgoingHeaders must not be null");
      return this;
    }

    /**
     * How {@link Outbox#sendEvent} writes the application's event objects as messages, such as
     * {@code txbox-jackson}'s {@code EventTypes}. Default none: only messages can be sent.
     */
    public Builder events(EventWriter events) {
      this.events = Objects.requireNonNull(events, "events must not be null");
      return this;
    }

    /** The outbox. */
    public Outbox build() {
      return new Outbox(this);
    }
  }
}
