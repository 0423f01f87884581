package io.txbox.nats;

import io.nats.client.ConsumerContext;
import io.nats.client.FetchConsumeOptions;
import io.nats.client.FetchConsumer;
import io.txbox.Inbox;
import io.txbox.InboxBatchHandler;
import io.txbox.InboxHandler;
import io.txbox.InboxQueue;
import io.txbox.Message;
import io.txbox.WhenExhausted;
import io.txbox.nats.internal.Durable;
import io.txbox.nats.internal.NatsClientVersion;
import io.txbox.nats.internal.NatsConnections;
import io.txbox.spi.Intake;
import io.txbox.spi.Subscriber;
import io.txbox.spi.support.DeliveryLoop;
import io.txbox.spi.support.LoopGuard;
import io.txbox.spi.support.RetryRequests;
import io.txbox.spi.support.SubscriberBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Feeds a JetStream stream into an {@link Inbox} through a durable pull consumer: each message is
 * received by the inbox (recorded and handled in one database transaction) and acknowledged only
 * after that transaction committed. A crash in between redelivers the message once {@code
 * AckWait} has passed, and the inbox recognises it as a duplicate.
 *
 * <pre>{@code
 * NatsSubscriber subscriber = NatsSubscriber.builder(inbox, "inventory", (tx, message, key) -> reserve(tx, message))
 *     .servers("nats://nats:4222")
 *     .stream("ORDERS")
 *     .build()
 *     .start();
 * ...
 * subscriber.close(); // finishes the messages in hand, hands the rest back at once
 * }</pre>
 *
 * <p>The durable consumer is named after the inbox consumer (see {@link Builder#durable}); it is
 * created, or updated to these settings, on {@link #start()}. Messages are fetched in batches of at
 * most {@link Builder#fetchSize} (the bound on work in hand) and handled in stream order, up to
 * {@link Builder#batchSize} of them in one database transaction; with
 * {@link Builder#concurrency} above 1, the messages of one batch with different keys (the {@code
 * txbox-key} header) are handled in parallel and those of one key one after another. A message
 * whose handler fails is retried with the retry policy's backoff; while it waits, the subscriber
 * tells the server it is still in progress so that {@code AckWait} does not expire, and the next
 * batch waits for it. Once the policy gives up, the message is dead-lettered in the inbox and its
 * key parked (later messages of the key are stored behind it), or, with {@link
 * WhenExhausted#BLOCK}, retried until a fixed handler takes it.
 *
 * <p>Order per key holds for one subscriber per durable consumer, also across crashes: a durable
 * left with unacknowledged messages is created again from its acknowledgement floor on {@link
 * #start()} (never earlier than the durable it replaces started), so those messages come again in
 * stream order, ahead of newer ones, instead of after {@code AckWait}. The same happens while it
 * runs when a delivery is lost on its way (the server's deliveries are numbered, so the subscriber
 * sees the gap): the messages after it wait until the lost one came again. A subscriber started on a
 * durable that another one is using (a rolling deploy) stands by, checking every second, and takes
 * over once the other is gone, so the two never share it. To scale out and keep order, partition
 * the subjects and give each partition its own durable.
 *
 * <p>{@code MaxDeliver} bounds the deliveries that were never acknowledged, such as a message
 * that crashes the process every time: past it, the server stops delivering that message to this
 * consumer (it stays in the stream, and the server publishes a {@code MAX_DELIVERIES} advisory).
 * Handler failures do not count, as the message is retried in hand.
 */
public final class NatsSubscriber implements Subscriber {
  private static final Logger log = LoggerFactory.getLogger(NatsSubscriber.class);
  private static final Pattern DURABLE = Pattern.compile("[A-Za-z0-9_-]{1,100}");
  /** Shortest wait of a pull request that JetStream accepts. */
  private static final long FETCH_WAIT_MILLIS = 1000;

  /** Default messages per fetch: the bound on work in hand. */
  public static final int DEFAULT_FETCH_SIZE = 100;
  /** Most messages per fetch. */
  public static final int MAX_FETCH_SIZE = 10_000;
  /** Default time the server waits for an acknowledgement before it delivers a message again. */
  public static final Duration DEFAULT_ACK_WAIT = Duration.ofSeconds(30);
  /** Default deliveries of a message that was never acknowledged before the server gives it up. */
  public static final int DEFAULT_MAX_DELIVER = 100;
  /** Most {@link Builder#maxDeliver} deliveries. */
  public static final int MAX_MAX_DELIVER = 1_000_000;
  /** Default threads that handle one batch's keys in parallel. */
  public static final int DEFAULT_CONCURRENCY = 1;

  private final Intake intake;
  private final String consumerName;
  private final Settings settings;
  private final NatsConnections connections;
  private final Durable durable;
  private final LoopGuard guard;
  private final DeliveryLoop loop;
  private final Deliveries deliveries = new Deliveries();
  private ExecutorService handlers;
  private Thread fetcher;
  private RetryRequests retryRequests;
  /** The durable bound to, and the consumer sequence of its last delivery: the fetching thread's alone. */
  private ConsumerContext consumer;
  private long delivered;
  private boolean restartNeeded;

  private NatsSubscriber(Builder b, SubscriberBuilder.Shared shared) {
    this.intake = shared.intake();
    this.consumerName = shared.consumerName();
    this.settings = new Settings(b.servers, b.stream, b.durable, b.subjects, b.fetchSize, b.ackWait, b.maxDeliver,
        shared.concurrency(), shared.drainTimeout());
    this.loop = shared.loop();
    this.connections = NatsConnections.forSubscribing(b.servers, "txbox-subscriber-" + consumerName);
    this.guard = new LoopGuard("txbox subscriber " + consumerName + " fetching from stream " + b.stream);
    this.durable = new Durable(new Durable.Settings(settings.stream(), settings.durable(), settings.subjects(),
        settings.ackWait(), settings.maxDeliver(), settings.fetchSize()), consumerName, connections, b.servers);
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
   * A builder for a subscriber that stores messages in {@code queue} and acknowledges them at once;
   * the queue's workers process them. The consumer name is the queue's.
   */
  public static Builder builder(InboxQueue queue) {
    return new Builder(Intake.queue(queue));
  }

  /**
   * A builder for a subscriber that hands each message to {@code intake} and acknowledges it
   * after {@code take} returned: for intakes that run in a framework's own transactions, such as
   * the txbox Spring Boot starter's. The consumer name is the intake's.
   */
  public static Builder builder(Intake intake) {
    return new Builder(Objects.requireNonNull(intake, "intake must not be null"));
  }

  /**
   * Creates or updates the durable consumer and starts fetching in the background.
   *
   * @throws IllegalStateException when the server cannot be reached or refuses the consumer
   */
  @Override
  public synchronized NatsSubscriber start() {
    if (fetcher != null) {
      throw new IllegalStateException("subscriber " + consumerName + " is already started");
    }
    Optional<Durable.Bound> bound = durable.bindIfFree();
    if (bound.isEmpty()) {
      log.info("subscriber {}: {}; standing by until it is free", consumerName, durable.inUseReason());
    }
    handlers = Executors.newFixedThreadPool(settings.concurrency(), r -> {
      Thread t = new Thread(r, "txbox-nats-handler-" + consumerName);
      t.setDaemon(true);
      return t;
    });
    fetcher = new Thread(() -> bound.or(() -> durable.awaitFree(loop)).ifPresent(this::fetchLoop),
        "txbox-nats-subscriber-" + consumerName);
    fetcher.start();
    retryRequests = RetryRequests.start(intake.consumer(), intake::runRetryRequests);
    return this;
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
  public long failures() {
    return loop.counters().failures();
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

  /** Finishes the messages in hand, hands the unstarted ones of the batch back and disconnects. */
  @Override
  public synchronized void close() {
    if (fetcher == null) {
      return;
    }
    loop.close(); // what is in hand and not under way is handed back at once
    retryRequests.close();
    try {
      fetcher.join(settings.drainTimeout().toMillis() + FETCH_WAIT_MILLIS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    handlers.shutdownNow();
    connections.close();
    fetcher = null;
  }

  /** Fetches and handles until closed; a failed step (the server gone, a bug) is retried after a second. */
  private void fetchLoop(Durable.Bound bound) {
    bind(bound);
    loop.repeatUntilClosed(guard, this::step); // unacknowledged messages of a failed step come again
    if (!loop.isOpen() && !Thread.currentThread().isInterrupted()) {
      handOver();
    }
  }

  /**
   * Closing cleanly, every message in hand was acknowledged or handed back, but the server counts
   * a message handed back as pending until it is delivered again, so a standby would take the
   * durable for busy until AckWait passed (30 s by default). Created again from its acknowledgement
   * floor, the durable has nothing pending: the next subscriber binds at once and gets what was
   * handed back first, in stream order.
   */
  private void handOver() {
    try {
      durable.restart();
    } catch (IllegalStateException e) {
      log.warn("subscriber {}: could not hand durable {} over at once, the next subscriber waits up to AckWait: {}",
          consumerName, settings.durable(), e.getMessage());
    }
  }

  /** At least one message and at most a batch: returns at once with what the stream has. */
  private List<io.nats.client.Message> fetch(ConsumerContext consumer) throws Exception {
    List<io.nats.client.Message> batch = new ArrayList<>();
    FetchConsumeOptions options = FetchConsumeOptions.builder()
        .maxMessages(settings.fetchSize()).noWaitExpiresIn(FETCH_WAIT_MILLIS).build();
    try (FetchConsumer fetch = consumer.fetch(options)) {
      for (io.nats.client.Message m = fetch.nextMessage(); m != null; m = fetch.nextMessage()) {
        batch.add(m);
      }
    }
    return batch;
  }

  /**
   * Fetches and handles a batch. The server numbers its deliveries (the consumer sequence); a
   * number skipped means a delivery never reached this subscriber, such as one that arrived after
   * a fetch had ended on the client's clock. The server would deliver it again only after {@code
   * AckWait}, behind the messages after it, so those are not handled: the durable starts again
   * from its acknowledgement floor and delivers everything unacknowledged in stream order.
   */
  private void step() throws Exception {
    if (restartNeeded) { // before any other fetch, however often the restart fails
      bind(durable.restart());
      restartNeeded = false;
    }
    List<io.nats.client.Message> batch = fetch(consumer);
    int lost = firstAfterLostDelivery(batch);
    handle(batch.subList(0, lost));
    if (lost < batch.size()) {
      long next = batch.get(lost).metaData().consumerSequence();
      log.warn("subscriber {}: delivered {} of durable {} after {}; creating it again from its acknowledgement"
          + " floor so that what never arrived comes again in order", consumerName, next, settings.durable(),
          delivered);
      restartNeeded = true;
    }
  }

  /** The index of the first message delivered after a lost one, else the batch's size. */
  private int firstAfterLostDelivery(List<io.nats.client.Message> batch) {
    for (int i = 0; i < batch.size(); i++) {
      long sequence = batch.get(i).metaData().consumerSequence();
      if (sequence != delivered + 1) {
        return i;
      }
      delivered = sequence;
    }
    return batch.size();
  }

  private void bind(Durable.Bound bound) {
    consumer = bound.consumer();
    delivered = bound.delivered();
  }

  /** Handles a batch: keys in parallel, each key's messages in stream order. */
  private void handle(List<io.nats.client.Message> batch) throws Exception {
    if (batch.isEmpty()) {
      return;
    }
    if (settings.concurrency() == 1) {
      loop.takeInOrder(batch, deliveries);
      return;
    }
    List<Future<?>> keys = new ArrayList<>();
    for (List<io.nats.client.Message> key : byKey(batch).values()) {
      keys.add(handlers.submit(() -> loop.takeInOrder(key, deliveries)));
    }
    for (Future<?> f : keys) {
      f.get();
    }
  }

  private static Map<String, List<io.nats.client.Message>> byKey(List<io.nats.client.Message> batch) {
    Map<String, List<io.nats.client.Message>> byKey = new LinkedHashMap<>();
    for (io.nats.client.Message m : batch) {
      String key = keyOrNull(m);
      // an unkeyed (or unreadable) message needs no order: it gets a group of its own
      byKey.computeIfAbsent(key != null ? "k:" + key : "m:" + byKey.size(), k -> new ArrayList<>()).add(m);
    }
    return byKey;
  }

  private static String keyOrNull(io.nats.client.Message m) {
    try {
      return NatsMessages.key(m);
    } catch (IllegalArgumentException e) {
      return null; // rejected with its place in the stream when it is taken
    }
  }

  /** How the loop settles a message with JetStream. */
  private final class Deliveries implements DeliveryLoop.Settlement<io.nats.client.Message> {
    @Override
    public Message read(io.nats.client.Message m) {
      return NatsMessages.toMessage(m);
    }

    @Override
    public void acknowledge(io.nats.client.Message m) {
      m.ack();
    }

    @Override
    public void reject(io.nats.client.Message m, RuntimeException why) {
      log.error("subscriber {}: skipped the unreadable message at stream sequence {}: {}", consumerName,
          m.metaData().streamSequence(), why.getMessage());
      m.term();
    }

    /** Handed back rather than left to AckWait; {@link #handOver} then frees the durable at once. */
    @Override
    public void release(List<io.nats.client.Message> ms) {
      ms.forEach(io.nats.client.Message::nak);
    }

    /** Often enough that AckWait never runs out while a message waits for its retry. */
    @Override
    public Duration progressInterval() {
      return settings.ackWait().dividedBy(3);
    }

    @Override
    public void inProgress(io.nats.client.Message m) {
      m.inProgress();
    }

    @Override
    public String describe(io.nats.client.Message m) {
      return " (stream sequence " + m.metaData().streamSequence() + ")";
    }
  }

  /** The checked settings, copied out of the builder, which may go on changing. */
  private record Settings(String servers, String stream, String durable, List<String> subjects, int fetchSize,
      Duration ackWait, int maxDeliver, int concurrency, Duration drainTimeout) {}

  /** Builds a {@link NatsSubscriber}; {@link #build()} checks the settings. */
  public static final class Builder extends SubscriberBuilder<Builder> {
    private String servers;
    private String stream;
    private String durable;
    private List<String> subjects = List.of();
    private int fetchSize = DEFAULT_FETCH_SIZE;
    private Duration ackWait = DEFAULT_ACK_WAIT;
    private int maxDeliver = DEFAULT_MAX_DELIVER;

    private Builder(Intake intake) {
      super(intake, DEFAULT_CONCURRENCY);
      this.durable = consumerName();
    }
    /** Server URLs, comma-separated, such as {@code nats://localhost:4222}. Required. */
    public Builder servers(String servers) {
      this.servers = servers;
      return this;
    }

    /** The JetStream stream to consume. Required; it must exist. */
    public Builder stream(String stream) {
      this.stream = stream;
      return this;
    }

    /**
     * The durable consumer's name. Default: the inbox consumer's name, which must then avoid the
     * {@code .} that NATS does not allow in a durable name.
     */
    public Builder durable(String durable) {
      this.durable = durable;
      return this;
    }

    /** Only these subjects of the stream (wildcards allowed). Default: every subject of the stream. */
    public Builder subjects(String... subjects) {
      this.subjects = List.of(subjects);
      return this;
    }

    /** Messages per fetch, the bound on work in hand. Default {@value #DEFAULT_FETCH_SIZE}, at most {@value #MAX_FETCH_SIZE}. */
    public Builder fetchSize(int fetchSize) {
      this.fetchSize = fetchSize;
      return this;
    }

    /**
     * How long the server waits for an acknowledgement before it delivers a message again: the
     * delay before a crashed subscriber's messages come back. Default 30 s, from 1 s to 1 h.
     */
    public Builder ackWait(Duration ackWait) {
      this.ackWait = ackWait;
      return this;
    }

    /**
     * Deliveries without an acknowledgement after which the server gives a message up for this
     * consumer. Default {@value #DEFAULT_MAX_DELIVER}, from 1 to {@value #MAX_MAX_DELIVER}.
     */
    public Builder maxDeliver(int maxDeliver) {
      this.maxDeliver = maxDeliver;
      return this;
    }

    /** Checks the settings and builds the subscriber; it connects on {@link NatsSubscriber#start()}. */
    public NatsSubscriber build() {
      NatsClientVersion.check(); // says so when the build picked an older client than txbox is tested with
      SubscriberBuilder.Shared shared = checkShared(NatsSubscriber.class);
      if (durable == null || !DURABLE.matcher(durable).matches()) {
        throw new IllegalArgumentException("durable must be 1 to 100 characters of A-Z a-z 0-9 _ - (NATS allows"
            + " no '.' there), was '" + durable + "': set durable(...) when the consumer name has a '.'");
      }
      NatsConnections.checkServers(servers);
      if (stream == null || stream.isBlank()) {
        throw new IllegalArgumentException("stream must name the JetStream stream to consume, such as ORDERS");
      }
      check("fetchSize", fetchSize, 1, MAX_FETCH_SIZE);
      check("maxDeliver", maxDeliver, 1, MAX_MAX_DELIVER);
      if (ackWait == null || ackWait.compareTo(Duration.ofSeconds(1)) < 0 || ackWait.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("ackWait must be >= 1 s and <= 1 h, was " + ackWait);
      }
      return new NatsSubscriber(this, shared);
    }

    private static void check(String name, int value, int min, int max) {
      if (value < min || value > max) {
        throw new IllegalArgumentException(name + " must be >= " + min + " and <= " + max + ", was " + value);
      }
    }
  }
}
