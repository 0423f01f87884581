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
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import io.txbox.rabbitmq.internal.RabbitClientVersion;
import io.txbox.rabbitmq.internal.RabbitConnections;
import io.txbox.spi.Intake;
import io.txbox.spi.support.IntakeBatches;
import io.txbox.spi.support.LoopGuard;
import io.txbox.spi.support.Retries;
import io.txbox.spi.support.RetryRequests;
import io.txbox.spi.Subscriber;
import io.txbox.spi.support.SubscriberCounters;
import io.txbox.spi.UnreadableMessageException;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
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
  private static final Pattern CONSUMER = Pattern.compile("[A-Za-z0-9._-]{1,100}");

  /** Default unacknowledged deliveries at a time. */
  public static final int DEFAULT_PREFETCH = 100;
  /** Most unacknowledged deliveries at a time. */
  public static final int MAX_PREFETCH = 10_000;
  /** Default most deliveries taken in one database transaction. */
  public static final int DEFAULT_BATCH_SIZE = 100;
  /** Default threads that handle different keys in parallel. */
  public static final int DEFAULT_CONCURRENCY = 1;
  /** Most handler threads. */
  public static final int MAX_CONCURRENCY = 64;
  /** Default time {@link #close()} waits for the deliveries in hand. */
  public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(30);
  /** Every how many one-second looks the supervisor asks the broker whether it still lists a consumer. */
  private static final int CONSUMER_CHECK_EVERY = 5;
  /** Largest message body the subscriber accepts: RabbitMQ's own hard limit. */
  private static final int MAX_BODY = 512 * 1024 * 1024;

  private final Intake intake;
  private final String consumerName;
  private final Settings settings;
  private final RabbitConnections connections;
  private final Retries retries;
  private final SubscriberCounters counters = new SubscriberCounters();
  private final LoopGuard loop;
  private final List<ExecutorService> workers = new ArrayList<>();
  private final List<Queue<Received>> received = new ArrayList<>();
  private final IntakeBatches<Received> batches;
  private final CountDownLatch stopped = new CountDownLatch(1);
  private volatile boolean running = true;
  private RetryRequests retryRequests;
  private volatile Channel channel;
  private Thread supervisor;
  private long looks; // the supervisor's thread only

  private RabbitSubscriber(Builder b, ConnectionFactory factory) {
    this.intake = b.intake;
    this.consumerName = b.consumerName;
    this.settings = new Settings(b.queue, b.prefetch, b.concurrency, b.drainTimeout);
    this.retries = new Retries(b.intake, b.retryPolicy, b.whenExhausted);
    this.batches = new IntakeBatches<>(b.intake, b.batchSize, counters);
    this.loop = new LoopGuard("txbox subscriber " + b.consumerName + " of queue " + b.queue);
    this.connections = new RabbitConnections(factory, "txbox-subscriber-" + b.consumerName);
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
    while (running) {
      try {
        if (stopped.await(1, TimeUnit.SECONDS)) {
          return;
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      loop.attempt(() -> { // a failure is logged; the next look is in 1 s
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
    workers.get(worker).execute(loop.guard(() -> takeQueued(received.get(worker))));
  }

  /** On a worker: the deliveries queued so far, in batches where it can, one at a time after a failure. */
  private void takeQueued(Queue<Received> queue) {
    List<Received> queued = new ArrayList<>();
    for (Received r = queue.poll(); r != null; r = queue.poll()) {
      queued.add(r);
    }
    int next = 0;
    if (running) {
      IntakeBatches.Taken taken = batches.take(queued, r -> RabbitMessages.toMessage(r.delivery()),
          batch -> batch.forEach(r -> ack(r.channel(), r.tag())));
      next = taken.count();
      if (taken.failure() != null) {
        Received failed = queued.get(next);
        takeUntilDone(failed, RabbitMessages.toMessage(failed.delivery()), taken.failure());
        next++;
      }
    }
    for (Received r : queued.subList(next, queued.size())) {
      handleUntilDone(r);
    }
  }

  /** Handles one delivery, retrying in hand until it succeeds, its channel is gone, or closing. */
  private void handleUntilDone(Received r) {
    Message message;
    try {
      message = RabbitMessages.toMessage(r.delivery());
    } catch (IllegalArgumentException e) {
      reject(r.channel(), r.tag(), e);
      return;
    }
    takeUntilDone(r, message, null);
  }

  /**
   * Takes {@code message}, retrying in hand until it succeeds, its channel is gone, or closing;
   * {@code failure}, when not null, is an attempt that already failed (in a batch).
   */
  private void takeUntilDone(Received r, Message message, Throwable failure) {
    Retries.Attempts attempts = retries.of(message);
    while (running && r.channel().isOpen()) {
      if (failure == null) {
        try {
          counters.countReceived(intake.take(message));
          ack(r.channel(), r.tag());
          return;
        } catch (UnreadableMessageException e) {
          reject(r.channel(), r.tag(), e);
          return;
        } catch (Exception | Error e) {
          failure = e;
        }
      }
      counters.countFailure();
      Optional<Duration> wait = attempts.failed(failure);
      if (wait.isEmpty()) {
        counters.countDeadLetter();
        ack(r.channel(), r.tag());
        return;
      }
      log.warn("subscriber {}: message {} failed (attempt {}), retrying in {} ms: {}",
          consumerName, message.id(), attempts.count(), wait.get().toMillis(), failure.toString());
      pause(wait.get());
      failure = null;
    }
    // closing, or the channel is gone: unacknowledged, the broker delivers it again
  }

  private void ack(Channel ch, long tag) {
    try {
      ch.basicAck(tag, false);
    } catch (IOException | RuntimeException e) {
      log.debug("subscriber {}: ack lost with the channel; the message comes again and the inbox absorbs it: {}",
          consumerName, e.toString());
    }
  }

  private void reject(Channel ch, long tag, RuntimeException e) {
    counters.countRejection();
    log.error("subscriber {}: rejected an unreadable message of queue '{}' (to its dead-letter exchange,"
        + " if any): {}", consumerName, settings.queue(), e.getMessage());
    try {
      ch.basicReject(tag, false);
    } catch (IOException | RuntimeException ex) {
      log.debug("subscriber {}: reject lost with the channel: {}", consumerName, ex.toString());
    }
  }

  private void pause(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public long processed() {
    return counters.processed();
  }

  @Override
  public long duplicates() {
    return counters.duplicates();
  }

  @Override
  public long parked() {
    return counters.parked();
  }

  @Override
  public long deadLettered() {
    return counters.deadLettered();
  }

  @Override
  public long failures() {
    return counters.failures();
  }

  @Override
  public boolean isTroubled() {
    return loop.isTroubled() || retryRequestsTroubled();
  }

  private synchronized boolean retryRequestsTroubled() {
    return retryRequests != null && retryRequests.isTroubled();
  }

  @Override
  public long rejected() {
    return counters.rejected();
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
    running = false; // deliveries not started yet are skipped, left unacknowledged
    stopped.countDown();
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

  /** Builds a {@link RabbitSubscriber}; {@link #build()} checks the settings. */
  public static final class Builder {
    private final String consumerName;
    private final Intake intake;
    private String uri;
    private String queue;
    private int prefetch = DEFAULT_PREFETCH;
    private int concurrency = DEFAULT_CONCURRENCY;
    private RetryPolicy retryPolicy = RetryPolicy.defaults();
    private WhenExhausted whenExhausted = WhenExhausted.DEAD_LETTER;
    private Duration drainTimeout = DEFAULT_DRAIN_TIMEOUT;
    private int batchSize = DEFAULT_BATCH_SIZE;

    private Builder(Intake intake) {
      this.consumerName = intake.consumer();
      this.intake = intake;
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

    /**
     * Threads that handle different keys in parallel (each with a database connection while it
     * handles a message). Default {@value #DEFAULT_CONCURRENCY}, at most {@value #MAX_CONCURRENCY}.
     */
    public Builder concurrency(int concurrency) {
      this.concurrency = concurrency;
      return this;
    }

    /**
     * Backoff between attempts at a failing message, how many attempts, and which errors are
     * permanent. Default {@link RetryPolicy#defaults()}.
     */
    public Builder retryPolicy(RetryPolicy retryPolicy) {
      this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy must not be null");
      return this;
    }

    /** What becomes of a message the retry policy gives up on. Default {@link WhenExhausted#DEAD_LETTER}. */
    public Builder whenExhausted(WhenExhausted whenExhausted) {
      this.whenExhausted = Objects.requireNonNull(whenExhausted, "whenExhausted must not be null");
      return this;
    }

    /**
     * Most deliveries of one worker taken in one database transaction, all or none: those that
     * arrived while it took the previous ones, up to this many. A handler failing in a batch rolls
     * it back, and the failed message is retried under the retry policy as if it had come alone.
     * 1 takes each alone. Default {@value #DEFAULT_BATCH_SIZE}, at most {@value IntakeBatches#MAX_BATCH_SIZE}.
     */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /** How long {@link RabbitSubscriber#close()} waits for the deliveries in hand. Default 30 s. */
    public Builder drainTimeout(Duration drainTimeout) {
      this.drainTimeout = drainTimeout;
      return this;
    }

    /** Checks the settings and builds the subscriber; it connects on {@link RabbitSubscriber#start()}. */
    public RabbitSubscriber build() {
      RabbitClientVersion.check(); // says so when the build picked an older client than txbox is tested with
      if (consumerName == null || !CONSUMER.matcher(consumerName).matches()) {
        throw new IllegalArgumentException(
            "consumer must be 1 to 100 characters of A-Z a-z 0-9 . _ -, was '" + consumerName + "'");
      }
      ConnectionFactory factory = RabbitConnections.factory(uri);
      factory.setMaxInboundMessageBodySize(MAX_BODY); // whatever the publisher was allowed to send
      if (queue == null || queue.isBlank()) {
        throw new IllegalArgumentException("queue must name the queue to consume, such as inventory.orders");
      }
      if (prefetch < 1 || prefetch > MAX_PREFETCH) {
        throw new IllegalArgumentException("prefetch must be >= 1 and <= " + MAX_PREFETCH + ", was " + prefetch);
      }
      if (concurrency < 1 || concurrency > MAX_CONCURRENCY) {
        throw new IllegalArgumentException("concurrency must be >= 1 and <= " + MAX_CONCURRENCY + ", was " + concurrency);
      }
      if (drainTimeout == null || drainTimeout.isNegative()) {
        throw new IllegalArgumentException("drainTimeout must be >= 0, was " + drainTimeout);
      }
      return new RabbitSubscriber(this, factory);
    }
  }
}
