package io.txbox.spring;

import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import java.util.List;
import java.util.Objects;

/**
 * A consumer the starter feeds from the broker through the inbox: declare one as a bean, and each
 * message is recorded and handled in one Spring transaction and acknowledged to the broker only
 * after that transaction committed, so its side effects happen once however often it is delivered.
 * Listeners start with the application context and drain on shutdown.
 *
 * <pre>{@code
 * @Bean
 * InboxListener inventory(JdbcTemplate jdbc) {
 *   return InboxListener.consumer("inventory").from("orders").handler((message, key) ->
 *       jdbc.update("UPDATE stock SET reserved = reserved + 1 WHERE sku = ?", skuOf(message)));
 * }
 * }</pre>
 *
 * <p>Typed events: hand it {@code txbox-jackson}'s {@code EventHandlers}, an {@link InboxHandler},
 * and each message arrives as today's version of its event class, whatever version wrote it:
 *
 * <pre>{@code
 * @Bean
 * EventTypes events(ObjectMapper mapper) { // the application's ObjectMapper, with its settings
 *   return EventTypes.builder(mapper).type("OrderPlaced", 3, OrderPlaced.class, "orders", OrderPlaced::sku)
 *       .upcast("OrderPlaced", 1, ...).upcast("OrderPlaced", 2, ...).build();
 * }
 *
 * @Bean
 * InboxListener inventory(EventTypes events, JdbcTemplate jdbc) {
 *   return InboxListener.consumer("inventory").from("orders").handler(EventHandlers.builder(events)
 *       .on(OrderPlaced.class, (tx, order, meta) -> jdbc.update("...", order.sku()))
 *       .build());
 * }
 * }</pre>
 *
 * <p>What {@code from} names depends on the broker: Kafka topics (one or more), a JetStream stream
 * (one), or a RabbitMQ queue (one).
 *
 * @param consumer the consumer's name: the inbox's deduplication scope and the Kafka group id,
 *     JetStream durable or RabbitMQ consumer tag
 * @param sources where the messages come from
 * @param concurrency how many messages are handled at once, in order per key (per partition on
 *     Kafka)
 * @param retryPolicy how a message whose handler fails is retried, and when it is given up on
 * @param whenExhausted what becomes of a message given up on: dead-lettered with its key parked
 *     (the default), or retried until a fixed handler takes it
 * @param handler what is done with each message, on the connection of the Spring transaction
 */
public record InboxListener(String consumer, List<String> sources, int concurrency, RetryPolicy retryPolicy,
    WhenExhausted whenExhausted, InboxHandler handler) {
  /** Most messages handled at once per listener. */
  public static final int MAX_CONCURRENCY = 64;

  /** Checks every field. */
  public InboxListener {
    try {
      Inbox.requireConsumerName(consumer);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("InboxListener " + e.getMessage(), e);
    }
    sources = List.copyOf(Objects.requireNonNull(sources, "sources must not be null"));
    if (sources.isEmpty()) {
      throw new IllegalArgumentException("InboxListener " + consumer
          + " reads from nothing: name the Kafka topics, JetStream stream or RabbitMQ queue with from(...)");
    }
    if (concurrency < 1 || concurrency > MAX_CONCURRENCY) {
      throw new IllegalArgumentException("InboxListener " + consumer + " concurrency must be between 1 and "
          + MAX_CONCURRENCY + ", was " + concurrency);
    }
    Objects.requireNonNull(retryPolicy, "InboxListener " + consumer + " needs a retryPolicy");
    Objects.requireNonNull(whenExhausted, "InboxListener " + consumer + " needs whenExhausted");
    Objects.requireNonNull(handler, "InboxListener " + consumer + " needs a handler");
  }

  /** Starts a listener for {@code consumer}. */
  public static Builder consumer(String consumer) {
    return new Builder(consumer);
  }

  /** Builds an {@link InboxListener}. */
  public static final class Builder {
    private final String consumer;
    private List<String> sources = List.of();
    private int concurrency = 1;
    private RetryPolicy retryPolicy = RetryPolicy.defaults();
    private WhenExhausted whenExhausted = WhenExhausted.DEAD_LETTER;

    private Builder(String consumer) {
      this.consumer = consumer;
    }

    /** The Kafka topics, the JetStream stream or the RabbitMQ queue to read. */
    public Builder from(String... sources) {
      this.sources = List.of(sources);
      return this;
    }

    /** How many messages are handled at once. Default 1. */
    public Builder concurrency(int concurrency) {
      this.concurrency = concurrency;
      return this;
    }

    /** Backoff, attempts and permanent errors for a failing message. Default {@link RetryPolicy#defaults()}. */
    public Builder retryPolicy(RetryPolicy retryPolicy) {
      this.retryPolicy = retryPolicy;
      return this;
    }

    /** What becomes of a message given up on. Default {@link WhenExhausted#DEAD_LETTER}. */
    public Builder whenExhausted(WhenExhausted whenExhausted) {
      this.whenExhausted = whenExhausted;
      return this;
    }

    /** The listener, handling each message with {@code handler}. */
    public InboxListener handler(MessageHandler handler) {
      Objects.requireNonNull(handler, "InboxListener " + consumer + " needs a handler");
      return handler((transaction, message, idempotencyKey) -> handler.handle(message, idempotencyKey));
    }

    /**
     * The listener, handling each message with {@code handler}, which is also given the Spring
     * transaction's connection: {@code txbox-jackson}'s {@code EventHandlers}, or a handler shared
     * with a plain {@link io.txbox.Inbox}.
     */
    public InboxListener handler(InboxHandler handler) {
      return new InboxListener(consumer, sources, concurrency, retryPolicy, whenExhausted, handler);
    }
  }
}
