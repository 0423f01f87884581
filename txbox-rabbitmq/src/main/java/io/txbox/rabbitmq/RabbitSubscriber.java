package io.txbox.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import io.txbox.Inbox;
import io.txbox.InboxBatchHandler;
import io.txbox.InboxHandler;
import io.txbox.InboxQueue;
import io.txbox.Message;
import io.txbox.WhenExhausted;
import io.txbox.rabbitmq.internal.RabbitClientVersion;
import io.txbox.rabbitmq.internal.RabbitConnections;
import io.txbox.spi.Intake;
import io.txbox.spi.Subscriber;
import io.txbox.spi.support.DeliveryLoop;
import io.txbox.spi.support.LoopGuard;
import io.txbox.spi.support.RetryRequests;
import io.txbox.spi.support.SubscriberBuilder;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Feeds a RabbitMQ queue into an {@link Inbox}: each delivery is received by the inbox (recorded
 * and handled in one database transaction) and acknowledged only after that transaction
 * committed. A crash in between leaves the delivery unacknowledged; the broker delivers it again
 * and the inbox recognises it as a duplicate.
 *
 * <pre>{@code
 * RabbitSubscriber subscriber = RabbitSubscriber.builder(inbox, "inventory", (tx, message, key) -> reserve(tx, message))
 *     .uri("amqp://app:secret@rabbit:5672")
 *     .queue("inventory.orders")
 *     .build()
 *     .start();
 * ...
 * subscriber.close(); // finishes the deliveries in hand; the broker requeues the rest
 * }</pre>
 *
 * <p>The queue must exist (txbox declares no topology). At most {@link Builder#prefetch} deliveries
 * are unacknowledged at a time, the bound on work in hand. Deliveries are handled in queue order;
 * with {@link Builder#concurrency} above 1, deliveries of different keys (the {@code txbox-key}
 * header) are handled on different threads, those of one key one after another. A delivery whose
 * handler fails is retried in hand with the retry policy's backoff, and later deliveries of its
 * key wait; once the policy gives up, it is dead-lettered in the inbox and its key parked (later
 * messages of the key are stored behind it), or, with {@link WhenExhausted#BLOCK}, retried until a
 * fixed handler takes it. One that cannot be read as a message is rejected without requeue,
 * which sends it to the queue's dead-letter exchange if it has one ({@code x-dead-letter-exchange}).
 *
 * <p>Per-key order holds for one consumer per queue: declare the queue with {@code
 * x-single-active-consumer} and run as many subscribers as you like, and the broker delivers to
 * one of them at a time. When the connection is lost the subscriber connects again after a second;
 * deliveries of the lost connection that were not acknowledged come again.
 */
public final class RabbitSubscriber implements Subscriber {
  private static final Logger log = LoggerFactory.getLogger(RabbitSubscriber.class);

  /** Default unacknowledged deliveries at a time. */
  public static final int DEFAULT_PREFETCH = 100;
  /** Most unacknowledged deliveries at a time. */
  public static final int MAX_PREFETCH = 10_000;
  /** Default threads that handle different keys in parallel. */
  public static final int DEFAULT_CONCURRENCY = 1;
  /** Every how many one-second looks the supervisor asks the broker whether it still lists a consumer. */
  private static final int CONSUMER_CHECK_EVERY = 5;
  /** Largest message body the subscriber accepts: RabbitMQ's own hard limit. */
  private static final int MAX_BODY = 512 * 1024 * 1024;

  private final Intake intake;
  private final String consumerName;
  private final Settings settings;
  private final RabbitConnections connections;
  private final DeliveryLoop loop;
  private final Deliveries deliveries = new Deliveries();
  private final LoopGuard guard;
  private final List<ExecutorService> workers = new ArrayList<>();
  private final List<Queue<Received>> received = new ArrayList<>();
  private RetryRequests retryRequests;
  private volatile Channel channel;
  private Thread supervisor;
  private long looks; // the supervisor's thread only

  private RabbitSubscriber(Builder b, SubscriberBuilder.Shared shared, ConnectionFactory factory) {
    this.intake = shared.intake();
    this.consumerName = shared.consumerName();
    this.settings = new Settings(b.queue, b.prefetch, shared.concurrency(), shared.drainTimeout());
    this.loop = shared.loop();
    this.guard = new LoopGuard("txbox subscriber " + consumerName + " of queue " + b.queue);
    this.connections = new RabbitConnections(factory, "txbox-subscriber-" + consumerName);
  }

  /** A builder for a subscriber that hands messages to {@code handler} through {@code inbox}. */
  public static Builder builder(Inbox inbox, String consumerName, InboxHandler handler) {
    return new Builder(Intake.inbox(inbox, consumerName, handler));
  }

  /**
   * A builder for a subscriber that hands each batch's new messages to {@code handler} at once,
   * through {@code inbox}, for set-based work; one at a time where a batch failed.
   */
  public static Builder builder(Inbox inbox, String consumerName, InboxBatchHandler handler) {
    return new Builder(Intake.inbox(inbox, consumerName, handler));
  }

  /**
   * A builder for a subscriber that stores deliveries in {@code queue} and acknowledges them at once;
   * the queue's workers process them. The consumer name is the queue's.
   */
  public static Builder builder(InboxQueue queue) {
    return new Builder(Intake.queue(queue));
  }

  /**
   * A builder for a subscriber that hands each delivery to {@code intake} and acknowledges it
   * after {@code take} returned: for intakes that run in a framework's own transactions, such as
   * the txbox Spring Boot starter's. The consumer name is the intake's.
   */
  public static Builder builder(Intake intake) {
    return new Builder(Objects.requireNonNull(intake, "intake must not be null"));
  }

  /**
   * Checks that the queue exists and starts consuming in the background.
   *
   * @throws IllegalStateException when the broker cannot be reached or has no such queue
   */
  @Override
  public synchronized RabbitSubscriber start() {
    if (supervisor != null) {
      throw new IllegalStateException("subscriber " + consumerName + " is already started");
    }
    for (int i = 0; i < settings.concurrency(); i++) {
      workers.add(Executors.newSingleThreadExecutor(r -> new Thread(r, "txbox-rabbitmq-handler-" + consumerName)));
      received.add(new ConcurrentLinkedQueue<>());
    }
    try {
      consume(); // the first connection in the caller's thread, so that a mistake shows at once
    } catch (IOException | TimeoutException e) {
      workers.forEach(ExecutorService::shutdownNow);
      workers.clear();
      connections.close();
      throw new IllegalStateException("subscriber " + consumerName + ": cannot consume queue '" + settings.queue()
          + "': " + describe(e) + " (it must exist; txbox declares no topology)", e);
    }
    supervisor = new Thread(this::superviseConnection, "txbox-rabbitmq-subscriber-" + consumerName);
    supervisor.start();
    retryRequests = RetryRequests.start(intake.consumer(), intake::runRetryRequests);
    return this;
  }

  private static String describe(Exception e) {
    return e.getCause() != null ? e.getCause().getMessage() : e.toString();
  }

  private void consume() throws IOException, TimeoutException {
    Connection connection = connections.get();
    Channel ch = connection.createChannel();
    ch.basicQos(settings.prefetch());
    ch.basicConsume(settings.queue(), false, "txbox-" + consumerName,
        (tag, delivery) -> dispatch(ch, delivery), tag -> log.warn("subscriber {}: the broker cancelled"
            + " consuming queue '{}' (deleted?)", consumerName, settings.queue()));
    channel = ch;
  }

  /** Connects again, a second after the connection or channel was lost, until closed. */
  private void superviseConnection() {
    while (!loop.closedWithin(Duration.ofSeconds(1))) {
      guard.attempt(() -> { // a failure is logged; the next look is in 1 s
        Channel ch = channel;
        if (ch == null || !ch.isOpen()) {
          consume();
          log.info("subscriber {}: consuming queue '{}' again", consumerName, settings.queue());
        } else if (++looks % CONSUMER_CHECK_EVERY == 0 && ch.consumerCount(settings.queue()) == 0) {
          // A node that restarts can take a consumer and then forget it (rabbitmq-server#4613):
          // the channel stays open and nothing arrives. Its deliveries in hand are void; they come again.
          log.warn("subscriber {}: the broker lists no consumer on queue '{}'; consuming again",
              consumerName, settings.queue());
          ch.abort();
          consume();
        }
      });
    }
  }

  /** A delivery and the channel it came on, which is the one to acknowledge it on. */
  private record Received(Channel channel, Delivery delivery) {
    long tag() {
      return delivery.getEnvelope().getDeliveryTag();
    }
  }

  /**
   * On the client's thread: queues the delivery for its key's worker, in arrival order. The
   * worker takes whatever its queue holds by then, so deliveries that arrive together are taken
   * together, up to a batch.
   */
  private void dispatch(Channel ch, Delivery delivery) {
    Object key = delivery.getProperties().getHeaders() == null ? null
        : delivery.getProperties().getHeaders().get(RabbitMessages.KEY);
    int worker = key == null ? 0 : Math.floorMod(key.toString().hashCode(), workers.size());
    received.get(worker).add(new Received(ch, delivery));
    workers.get(worker).execute(guard.guard(() -> takeQueued(received.get(worker))));
  }

  /** On a worker: the deliveries queued so far, in batches where it can, in queue order. */
  private void takeQueued(Queue<Received> queue) {
    List<Received> queued = new ArrayList<>();
    for (Received r = queue.poll(); r != null; r = queue.poll()) {
      queued.add(r);
    }
    loop.takeInOrder(queued, deliveries);
  }

  /** How the loop settles a delivery: on the channel it came on, which must still be open. */
  private final class Deliveries implements DeliveryLoop.Settlement<Received> {
    @Override
    public Message read(Received r) {
      return RabbitMessages.toMessage(r.delivery());
    }

    @Override
    public boolean held(Received r) {
      return r.channel().isOpen(); // once closed, the broker requeued what it had not heard of
    }

    @Override
    public void acknowledge(Received r) {
      try {
        r.channel().basicAck(r.tag(), false);
      } catch (IOException | RuntimeException e) {
        log.debug("subscriber {}: ack lost with the channel; the message comes again and the inbox absorbs it: {}",
            consumerName, e.toString());
      }
    }

    @Override
    public void reject(Received r, RuntimeException why) {
      log.error("subscriber {}: rejected an unreadable message of queue '{}' (to its dead-letter exchange,"
          + " if any): {}", consumerName, settings.queue(), why.getMessage());
      settle(r, false);
    }

    /** Requeued at once, in their places: the consumer is cancelled, so they go to the next one. */
    @Override
    public void release(List<Received> rs) {
      rs.stream().filter(this::held).forEach(r -> settle(r, true));
    }

    private void settle(Received r, boolean requeue) {
      try {
        r.channel().basicReject(r.tag(), requeue);
      } catch (IOException | RuntimeException e) {
        log.debug("subscriber {}: reject lost with the channel: {}", consumerName, e.toString());
      }
    }
  }

  @Override
  public long processed() {
    return loop.counters().processed();
  }

  @Override
  public long duplicates() {
    return loop.counters().duplicates();
  }

  @Override
  public long parked() {
    return loop.counters().parked();
  }

  @Override
  public long deadLettered() {
    return loop.counters().deadLettered();
  }

  @Override
  public long failures() {
    return loop.counters().failures();
  }

  @Override
  public boolean isTroubled() {
    return guard.isTroubled() || retryRequestsTroubled();
  }

  private synchronized boolean retryRequestsTroubled() {
    return retryRequests != null && retryRequests.isTroubled();
  }

  @Override
  public long rejected() {
    return loop.counters().rejected();
  }

  /** Stops taking deliveries, finishes those in hand, and disconnects; the broker requeues the rest. */
  @Override
  public synchronized void close() {
    if (supervisor == null) {
      return;
    }
    Channel ch = channel;
    if (ch != null && ch.isOpen()) {
      try {
        ch.basicCancel("txbox-" + consumerName); // no new deliveries; those in hand still ack
      } catch (IOException | RuntimeException e) {
        log.debug("subscriber {}: cancel failed: {}", consumerName, e.toString());
      }
    }
    loop.close(); // what is in hand and not under way goes back to the queue at once
    retryRequests.close();
    long deadline = System.nanoTime() + settings.drainTimeout().toNanos();
    for (ExecutorService w : workers) {
      w.shutdown();
      try {
        w.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      w.shutdownNow();
    }
    connections.close();
    supervisor = null;
  }

  /** The checked settings, copied out of the builder, which may go on changing. */
  private record Settings(String queue, int prefetch, int concurrency, Duration drainTimeout) {}

  /**
   * Builds a {@link RabbitSubscriber}; {@link #build()} checks the settings. The retry policy,
   * batch size, concurrency and drain timeout are every subscriber's ({@link SubscriberBuilder}).
   */
  public static final class Builder extends SubscriberBuilder<Builder> {
    private String uri;
    private String queue;
    private int prefetch = DEFAULT_PREFETCH;

    private Builder(Intake intake) {
      super(intake, DEFAULT_CONCURRENCY);
    }

    /** The broker, such as {@code amqp://user:password@rabbit:5672/vhost}. Required. */
    public Builder uri(String uri) {
      this.uri = uri;
      return this;
    }

    /** The queue to consume. Required; it must exist. */
    public Builder queue(String queue) {
      this.queue = queue;
      return this;
    }

    /** Unacknowledged deliveries at a time, the bound on work in hand. Default {@value #DEFAULT_PREFETCH}, at most {@value #MAX_PREFETCH}. */
    public Builder prefetch(int prefetch) {
      this.prefetch = prefetch;
      return this;
    }

    /** Checks the settings and builds the subscriber; it connects on {@link RabbitSubscriber#start()}. */
    public RabbitSubscriber build() {
      RabbitClientVersion.check(); // says so when the build picked an older client than txbox is tested with
      SubscriberBuilder.Shared shared = checkShared(RabbitSubscriber.class);
      ConnectionFactory factory = RabbitConnections.factory(uri);
      factory.setMaxInboundMessageBodySize(MAX_BODY); // whatever the publisher was allowed to send
      if (queue == null || queue.isBlank()) {
        throw new IllegalArgumentException("queue must name the queue to consume, such as inventory.orders");
      }
      if (prefetch < 1 || prefetch > MAX_PREFETCH) {
        throw new IllegalArgumentException("prefetch must be >= 1 and <= " + MAX_PREFETCH + ", was " + prefetch);
      }
      return new RabbitSubscriber(this, shared, factory);
    }
  }
}
