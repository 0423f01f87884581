package io.txbox.jackson;

import io.txbox.InboxHandler;
import io.txbox.Message;
import io.txbox.UnprocessableMessageException;
import java.sql.Connection;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * An inbox handler that reads each message as the current version of its type and hands it to
 * the typed handler registered for that type. Events of types without a handler are skipped (and
 * recorded as processed), so a topic can carry types this consumer does not care about, unless
 * {@link Builder#failOnUnhandled()} says otherwise.
 *
 * <pre>{@code
 * InboxHandler handler = EventHandlers.builder(types)
 *     .on(OrderPlaced.class, (tx, order, meta) -> stock.reserve(tx, order))
 *     .on(OrderCancelled.class, (tx, cancelled, meta) -> stock.release(tx, cancelled))
 *     .build();
 * KafkaSubscriber.builder(inbox, "inventory", handler).topics("orders").build().start();
 * }</pre>
 */
public final class EventHandlers implements InboxHandler {
  private final EventTypes types;
  private final Map<String, TypedHandler<Object>> byTypeName;
  private final boolean failOnUnhandled;

  private EventHandlers(Builder b) {
    this.types = b.types;
    this.byTypeName = Map.copyOf(b.byTypeName);
    this.failOnUnhandled = b.failOnUnhandled;
  }

  /** A builder of handlers for the types of {@code types}. */
  public static Builder builder(EventTypes types) {
    return new Builder(Objects.requireNonNull(types, "types must not be null"));
  }

  @Override
  public void handle(Connection transaction, Message message, String idempotencyKey) throws Exception {
    TypedHandler<Object> handler = byTypeName.get(types.currentName(message.type()));
    if (handler == null) {
      if (failOnUnhandled) {
        throw new UnprocessableMessageException("event " + message.id() + " is of type " + message.type()
            + ", which this consumer has no handler for");
      }
      return;
    }
    Object event = types.read(message);
    handler.handle(transaction, event, new EventMetadata(message.id(), message.type(), message.version(),
        message.key(), message.createdAt(), message.headers(), idempotencyKey));
  }

  /** Registers one handler per event class. */
  public static final class Builder {
    private final EventTypes types;
    private final Map<String, TypedHandler<Object>> byTypeName = new HashMap<>();
    private boolean failOnUnhandled;

    private Builder(EventTypes types) {
      this.types = types;
    }

    /** Handles events of {@code eventClass}, which must be registered in the types. */
    @SuppressWarnings("unchecked")
    public <T> Builder on(Class<T> eventClass, TypedHandler<? super T> handler) {
      Objects.requireNonNull(handler, "handler must not be null");
      String name = types.nameOf(eventClass);
      if (byTypeName.putIfAbsent(name, (TypedHandler<Object>) handler) != null) {
        throw new IllegalArgumentException("two handlers for " + eventClass.getSimpleName());
      }
      return this;
    }

    /** An event of a type without a handler is dead-lettered instead of skipped. */
    public Builder failOnUnhandled() {
      this.failOnUnhandled = true;
      return this;
    }

    public EventHandlers build() {
      return new EventHandlers(this);
    }
  }
}
