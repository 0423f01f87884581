package io.txbox.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Return;
import com.rabbitmq.client.ShutdownSignalException;
import io.txbox.Message;
import io.txbox.rabbitmq.internal.Confirms;
import io.txbox.rabbitmq.internal.RabbitClientVersion;
import io.txbox.rabbitmq.internal.RabbitConnections;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes relay batches to RabbitMQ: persistent messages, {@code mandatory} so that an
 * unroutable message comes back as an error instead of vanishing, and publisher confirms awaited
 * for the whole batch. A message counts as delivered only when the broker confirmed it and did not
 * return it.
 *
 * <pre>{@code
 * RabbitPublisher rabbit = RabbitPublisher.builder()
 *     .uri("amqp://app:secret@rabbit:5672/prod")
 *     .router(m -> new RabbitRoute("events", m.key()))
 *     .build();
 * }</pre>
 *
 * <p>By default a message goes to the exchange named by its destination with its key as the
 * routing key (the type when it has none). Order per key holds when each key's messages reach one
 * queue with one active consumer: bind a queue to a fanout or topic exchange for total order, or
 * n queues to a consistent-hash exchange (plugin {@code rabbitmq_consistent_hash_exchange}), which
 * hashes the routing key, to spread keys over n consumers. Declare such queues with {@code
 * x-single-active-consumer} so a standby subscriber cannot interleave with the active one.
 *
 * <p>An exchange that does not exist, a message no queue takes (returned), and a message over
 * {@link Builder#maxMessageSize} are {@link PermanentPublishException}s and dead-letter at once.
 * A broken connection fails the rest of the batch for now; the next batch connects again.
 */
public final class RabbitPublisher implements Publisher {
  private static final Logger log = LoggerFactory.getLogger(RabbitPublisher.class);
  /** Default time to wait for the confirms of a batch. */
  public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(10);
  /** Longest accepted {@link Builder#confirmTimeout}. */
  public static final Duration MAX_CONFIRM_TIMEOUT = Duration.ofMinutes(5);
  /** Default largest payload: RabbitMQ 4's {@code max_message_size}. */
  public static final int DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024;
  /** Largest accepted {@link Builder#maxMessageSize}: RabbitMQ's own hard limit. */
  public static final int MAX_MAX_MESSAGE_SIZE = 512 * 1024 * 1024;

  private final RabbitConnections connections;
  private final Function<Message, RabbitRoute> router;
  private final SendScope sendScope;
  private final Duration confirmTimeout;
  private final int maxMessageSize;
  private final Set<String> knownExchanges = new HashSet<>();
  private Channel channel;
  /** Where the open channel's confirms go: the batch in flight on that channel, and no other. */
  private AtomicReference<Confirms> channelConfirms = new AtomicReference<>(new Confirms());

  private RabbitPublisher(Builder b, ConnectionFactory factory) {
    this.connections = new RabbitConnections(factory, "txbox-relay");
    this.router = b.router;
    this.sendScope = b.sendScope;
    this.confirmTimeout = b.confirmTimeout;
    this.maxMessageSize = b.maxMessageSize;
  }

  /** A builder with the defaults above. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public synchronized PublishResult publish(List<Message> batch) {
    Channel ch;
    try {
      ch = channel();
    } catch (IOException | TimeoutException | RuntimeException e) {
      return PublishResult.allFailed(batch.size(), e);
    }
    Confirms batchConfirms = new Confirms();
    channelConfirms.set(batchConfirms);
    Map<Integer, Exception> failures = new HashMap<>();
    Map<String, Exception> exchangeFailures = new HashMap<>();
    Set<String> checked = new HashSet<>();
    for (int i = 0; i < batch.size(); i++) {
      Message m = batch.get(i);
      RabbitRoute route = router.apply(m);
      if (checked.add(route.exchange())) { // once per exchange and batch
        Exception missing = checkExchange(route.exchange());
        if (missing != null) {
          exchangeFailures.put(route.exchange(), missing);
        }
      }
      Exception failed = exchangeFailures.get(route.exchange());
      if (failed == null && m.payloadSize() > maxMessageSize) {
        failed = new PermanentPublishException("message " + m.id() + " has " + m.payloadSize()
            + " bytes, over maxMessageSize " + maxMessageSize + ": raise it (and the broker's max_message_size)"
            + " or send a reference to the data");
      }
      if (failed == null) {
        try {
          batchConfirms.sent(ch.getNextPublishSeqNo(), i, m.id().toString());
          try (SendScope.Entered ignored = sendScope.enter(m)) {
            ch.basicPublish(route.exchange(), route.routingKey(), true, RabbitMessages.properties(m), m.payload());
          }
          continue;
        } catch (IOException | RuntimeException e) { // a broken channel: the rest of the batch waits too
          failed = e;
          exchangeFailures.put(route.exchange(), e);
        }
      }
      failures.put(i, failed);
    }
    try {
      batchConfirms.await(confirmTimeout.toMillis()).forEach(failures::putIfAbsent);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      batchConfirms.closed(e);
    }
    if (failures.values().stream().anyMatch(e -> !(e instanceof PermanentPublishException))) {
      discardChannel(); // unanswered confirms belong to a channel we cannot trust any more
    }
    if (!batch.isEmpty() && failures.size() == batch.size()
        && failures.values().stream().allMatch(e -> e instanceof TimeoutException)) {
      // Nothing answered at all: the connection may look open and be dead (a half-open socket
      // that the heartbeat has not noticed yet). The next batch connects again.
      connections.close();
    }
    return PublishResult.of(batch.size(), failures);
  }

  private Channel channel() throws IOException, TimeoutException {
    if (channel == null || !channel.isOpen()) {
      Channel ch = connections.get().createChannel();
      ch.confirmSelect();
      // Sequence numbers start again on every channel: a late answer on a channel given up must
      // never settle a message of the batch on its successor.
      AtomicReference<Confirms> confirms = new AtomicReference<>(new Confirms());
      ch.addConfirmListener((seq, multiple) -> confirms.get().acked(seq, multiple),
          (seq, multiple) -> confirms.get().nacked(seq, multiple));
      ch.addReturnListener(r -> returned(confirms.get(), r));
      ch.addShutdownListener(cause -> {
        if (!cause.isInitiatedByApplication()) {
          confirms.get().closed(new IOException("the channel closed: " + cause.getMessage(), cause));
        }
      });
      channel = ch;
      channelConfirms = confirms;
    }
    return channel;
  }

  /** An unroutable message: no queue is bound for its routing key. Retrying will not help. */
  private static void returned(Confirms confirms, Return r) {
    confirms.returned(r.getProperties().getMessageId(), new PermanentPublishException("no queue takes messages"
        + " from exchange '" + r.getExchange() + "' with routing key '" + r.getRoutingKey() + "' ("
        + r.getReplyText() + "): bind a queue, or route the destination elsewhere"));
  }

  /** {@code null} when the exchange exists or the broker cannot say; else the permanent error. */
  private Exception checkExchange(String exchange) {
    if (exchange.isEmpty() || knownExchanges.contains(exchange)) {
      return null;
    }
    try (Channel probe = connections.get().createChannel()) {
      probe.exchangeDeclarePassive(exchange);
      knownExchanges.add(exchange);
      return null;
    } catch (IOException e) {
      if (e.getCause() instanceof ShutdownSignalException s && s.getMessage().contains("NOT_FOUND")) {
        return new PermanentPublishException("exchange '" + exchange + "' does not exist: declare it,"
            + " or route the destination elsewhere");
      }
      return null;
    } catch (TimeoutException | RuntimeException e) {
      return null; // the publish itself will tell, for now
    }
  }

  private void discardChannel() {
    if (channel != null) {
      try {
        channel.abort();
      } catch (IOException | RuntimeException e) {
        log.debug("closing a broken channel: {}", e.toString());
      }
      channel = null;
    }
  }

  @Override
  public synchronized void close() {
    discardChannel();
    connections.close();
  }

  /** Builds a {@link RabbitPublisher}; {@link #build()} checks the settings. */
  public static final class Builder {
    private String uri;
    private Function<Message, RabbitRoute> router =
        m -> new RabbitRoute(m.destination(), m.key() != null ? m.key() : m.type());
    private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;
    private SendScope sendScope = SendScope.NONE;
    private int maxMessageSize = DEFAULT_MAX_MESSAGE_SIZE;

    private Builder() {}

    /** The broker, such as {@code amqp://user:password@rabbit:5672/vhost}. Required. */
    public Builder uri(String uri) {
      this.uri = uri;
      return this;
    }

    /** Maps a message to its exchange and routing key. Default: its destination and its key (or type). */
    public Builder router(Function<Message, RabbitRoute> router) {
      this.router = Objects.requireNonNull(router, "router must not be null");
      return this;
    }

    /** How long a batch waits for its confirms; the unanswered fail and are sent again. Default 10 s, at most 5 min. */
    public Builder confirmTimeout(Duration confirmTimeout) {
      this.confirmTimeout = confirmTimeout;
      return this;
    }

    /**
     * Largest payload sent, in bytes; a larger message dead-letters at once instead of closing
     * the channel. Set it to the broker's {@code max_message_size}. Default 16 MiB, at most 512 MiB.
     */
    public Builder maxMessageSize(int maxMessageSize) {
      this.maxMessageSize = maxMessageSize;
      return this;
    }

    /**
     * Entered around handing each message to the RabbitMQ channel, for tracing instrumentation of the
     * client to join the message's trace. Default none.
     */
    public Builder sendScope(SendScope sendScope) {
      this.sendScope = Objects.requireNonNull(sendScope, "sendScope must not be null");
      return this;
    }

    /** Checks the settings and builds the publisher; it connects on first use. */
    public RabbitPublisher build() {
      RabbitClientVersion.check(); // says so when the build picked an older client than txbox is tested with
      ConnectionFactory factory = RabbitConnections.factory(uri);
      if (confirmTimeout == null || confirmTimeout.compareTo(Duration.ofMillis(1)) < 0
          || confirmTimeout.compareTo(MAX_CONFIRM_TIMEOUT) > 0) {
        throw new IllegalArgumentException("confirmTimeout must be >= 1 ms and <= " + MAX_CONFIRM_TIMEOUT + ", was " + confirmTimeout);
      }
      if (maxMessageSize < 1 || maxMessageSize > MAX_MAX_MESSAGE_SIZE) {
        throw new IllegalArgumentException("maxMessageSize must be >= 1 and <= " + MAX_MAX_MESSAGE_SIZE + ", was " + maxMessageSize);
      }
      return new RabbitPublisher(this, factory);
    }
  }
}
