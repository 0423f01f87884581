package io.txbox.sqs;

import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.InboxQueue;
import io.txbox.Message;
import io.txbox.WhenExhausted;
import io.txbox.spi.Intake;
import io.txbox.spi.Subscriber;
import io.txbox.spi.support.DeliveryLoop;
import io.txbox.spi.support.LoopGuard;
import io.txbox.spi.support.RetryRequests;
import io.txbox.spi.support.SubscriberBuilder;
import io.txbox.sqs.internal.ClientSettings;
import io.txbox.sqs.internal.InHand;
import io.txbox.sqs.internal.QueueUrls;
import io.txbox.sqs.internal.SqsClientVersion;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;

/**
 * Feeds an SQS queue into an {@link Inbox}: each message is received by the inbox (recorded and
 * handled in one database transaction) and deleted from the queue only after that transaction
 * committed. A crash in between leaves it in the queue; it comes again after its visibility
 * timeout and the inbox recognises it as a duplicate.
 *
 * <pre>{@code
 * SqsSubscriber subscriber = SqsSubscriber.builder(inbox, "inventory", (tx, message, key) -> reserve(tx, message))
 *     .region("eu-west-1")
 *     .queue("orders.fifo")
 *     .build()
 *     .start();
 * ...
 * subscriber.close(); // finishes the messages in hand; the rest become visible again at once
 * }</pre>
 *
 * <p>{@link Builder#concurrency} receivers long-poll the queue ({@link Builder#waitTime}, up to
 * ten messages each), and take the messages of one receive in one database transaction where
 * they can ({@link Builder#batchSize}). On a FIFO queue SQS gives a message group (a key, as {@link SqsPublisher}
 * sends it) to one receiver at a time, so keys are handled in parallel and each key in order;
 * a standard queue has no order at all. While a message is in hand its visibility timeout is
 * extended every third of {@link Builder#visibilityTimeout}, so a slow handler or a retry does
 * not let SQS hand it to another receiver.
 *
 * <p>A message whose handler fails is retried in hand with the retry policy's backoff, and later
 * messages of its key wait; once the policy gives up, it is dead-lettered in the inbox and its
 * key parked (later messages of the key are stored behind it and deleted from the queue), or,
 * with {@link WhenExhausted#BLOCK}, retried until a fixed handler takes it. A message that cannot
 * be read as a txbox message is left in the queue and comes again after its visibility timeout:
 * give the queue a redrive policy ({@code maxReceiveCount}) so that SQS moves it to the queue's
 * dead-letter queue.
 */
public final class SqsSubscriber implements Subscriber {
  private static final Logger log = LoggerFactory.getLogger(SqsSubscriber.class);

  /** Default receivers, each with up to ten messages in hand. */
  public static final int DEFAULT_CONCURRENCY = 4;
  /** Default time SQS hides a received message from other receivers; extended while in hand. */
  public static final Duration DEFAULT_VISIBILITY_TIMEOUT = Duration.ofSeconds(30);
  /** Longest visibility timeout: SQS's. */
  public static final Duration MAX_VISIBILITY_TIMEOUT = Duration.ofHours(12);
  /**
   * Default long-poll wait of one receive. Not SQS's longest, 20 s: ElasticMQ, the SQS-compatible
   * server teams test with, answers a 20 s poll with HTTP 503 (its own request timeout is 20 s), and
   * the SDK's retries of it took a receiver's call past its timeout (50 s of errors and a {@link
   * #close()} of 50 s). {@code close()} lets a receive under way finish, so the wait also bounds a
   * clean stop; an idle receiver makes six calls a minute.
   */
  public static final Duration DEFAULT_WAIT_TIME = Duration.ofSeconds(10);
  /** Longest long-poll wait: SQS's (ElasticMQ answers it with HTTP 503). */
  public static final Duration MAX_WAIT_TIME = Duration.ofSeconds(20);
  /** Default messages per receive: SQS's most. */
  public static final int DEFAULT_MAX_MESSAGES = 10;

  private final Intake intake;
  private final String consumerName;
  private final Settings settings;
  private final SqsClient client;
  private final boolean ownClient;
  private final DeliveryLoop loop;
  private final Deliveries deliveries = new Deliveries();
  private final LoopGuard guard;
  private final List<Thread> receivers = new ArrayList<>();
  private QueueUrls.Queue queue;
  private InHand inHand;
  private RetryRequests retryRequests;

  private SqsSubscriber(Builder b, SubscriberBuilder.Shared shared) {
    this.intake = shared.intake();
    this.consumerName = shared.consumerName();
    this.settings = new Settings(b.queue, shared.concurrency(), b.visibilityTimeout, b.waitTime, b.maxMessages,
        shared.drainTimeout());
    this.ownClient = b.client == null;
    // a receive waits up to waitTime for messages: the call may take that long and more
    this.client = ownClient ? b.clients.build(b.waitTime.plusSeconds(30)) : b.client;
    this.loop = shared.loop();
    this.guard = new LoopGuard("txbox subscriber " + consumerName + " of SQS queue " + b.queue);
  }

  /** A builder for a subscriber that hands messages to {@code handler} through {@code inbox}. */
  public static Builder builder(Inbox inbox, String consumerName, InboxHandler handler) {
    return new Builder(Intake.inbox(inbox, consumerName, handler));
  }

  /**
   * A builder for a subscriber that stores messages in {@code queue} and deletes them from SQS at
   * once; the queue's workers process them. The consumer name is the queue's.
   */
  public static Builder builder(InboxQueue queue) {
    return new Builder(Intake.queue(queue));
  }

  /**
   * A builder for a subscriber that hands each message to {@code intake} and deletes it after
   * {@code take} returned: for intakes that run in a framework's own transactions, such as the
   * txbox Spring Boot starter's. The consumer name is the intake's.
   */
  public static Builder builder(Intake intake) {
    return new Builder(Objects.requireNonNull(intake, "intake must not be null"));
  }

  /**
   * Looks the queue up and starts receiving in the background.
   *
   * @throws IllegalStateException when SQS cannot be reached or has no such queue
   */
  @Override
  public synchronized SqsSubscriber start() {
    if (queue != null) {
      throw new IllegalStateException("subscriber " + consumerName + " is already started");
    }
    try {
      queue = new QueueUrls(client).of(settings.queue());
    } catch (SdkException e) {
      closeClient();
      throw new IllegalStateException("subscriber " + consumerName + ": cannot find SQS queue '" + settings.queue()
          + "': " + e.getMessage() + " (it must exist; txbox creates no queues)", e);
    }
    inHand = InHand.start(client, queue.url(), settings.visibilityTimeout(), consumerName);
    for (int i = 0; i < settings.concurrency(); i++) {
      Thread receiver = new Thread(this::receiveUntilClosed, "txbox-sqs-subscriber-" + consumerName + "-" + i);
      receivers.add(receiver);
      receiver.start();
    }
    retryRequests = RetryRequests.start(intake.consumer(), intake::runRetryRequests);
    return this;
  }

  private void receiveUntilClosed() {
    loop.repeatUntilClosed(guard, this::receiveAndTake); // SQS unreachable, say: logged, tried again
  }

  /** One long poll, and the messages it brought in the order SQS gave them. */
  private void receiveAndTake() {
    List<software.amazon.awssdk.services.sqs.model.Message> received = client.receiveMessage(r -> r
        .queueUrl(queue.url())
        .maxNumberOfMessages(settings.maxMessages())
        .waitTimeSeconds((int) settings.waitTime().toSeconds())
        .visibilityTimeout((int) settings.visibilityTimeout().toSeconds())
        .messageAttributeNames("All")
        .messageSystemAttributeNames(MessageSystemAttributeName.MESSAGE_GROUP_ID,
            MessageSystemAttributeName.MESSAGE_DEDUPLICATION_ID, MessageSystemAttributeName.SENT_TIMESTAMP))
        .messages();
    inHand.received(received);
    try {
      loop.takeInOrder(received, deliveries);
    } finally {
      // those left by a failure of this step: visible to the next receiver at once, never kept in
      // hand and extended forever
      inHand.releaseAll(received);
    }
  }

  /** How the loop settles an SQS message: deleted once taken, made visible again when released. */
  private final class Deliveries
      implements DeliveryLoop.Settlement<software.amazon.awssdk.services.sqs.model.Message> {
    @Override
    public Message read(software.amazon.awssdk.services.sqs.model.Message received) {
      return SqsMessages.toMessage(received, queue.name());
    }

    @Override
    public void acknowledge(software.amazon.awssdk.services.sqs.model.Message received) {
      inHand.delete(received);
    }

    /** Left to the queue's redrive policy: it comes again until SQS moves it. */
    @Override
    public void reject(software.amazon.awssdk.services.sqs.model.Message received, RuntimeException why) {
      inHand.leave(received);
      log.error("subscriber {}: message {} of SQS queue '{}' is unreadable and stays in the queue until its"
          + " redrive policy moves it to the dead-letter queue: {}", consumerName, received.messageId(),
          queue.name(), why.getMessage());
    }

    @Override
    public void release(List<software.amazon.awssdk.services.sqs.model.Message> received) {
      inHand.releaseAll(received);
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
  public long rejected() {
    return loop.counters().rejected();
  }

  @Override
  public boolean isTroubled() {
    return guard.isTroubled() || retryRequestsTroubled() || inHandTroubled();
  }

  private synchronized boolean retryRequestsTroubled() {
    return retryRequests != null && retryRequests.isTroubled();
  }

  private synchronized boolean inHandTroubled() {
    return inHand != null && inHand.isTroubled();
  }

  /**
   * Stops receiving, finishes the messages in hand and makes the rest visible again at once. A
   * receive already waiting is let finish (at most {@link Builder#waitTime}); what it brings is
   * made visible again too.
   */
  @Override
  public synchronized void close() {
    if (queue == null) {
      return;
    }
    loop.close(); // what is in hand and not under way becomes visible again at once
    retryRequests.close();
    long deadline = System.nanoTime() + settings.drainTimeout().plus(settings.waitTime()).toNanos();
    for (Thread receiver : receivers) {
      try {
        receiver.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    inHand.close();
    closeClient();
    queue = null;
  }

  private void closeClient() {
    if (ownClient) {
      client.close();
    }
  }

  /** The checked settings, copied out of the builder, which may go on changing. */
  private record Settings(String queue, int concurrency, Duration visibilityTimeout, Duration waitTime,
      int maxMessages, Duration drainTimeout) {}

  /** Builds an {@link SqsSubscriber}; {@link #build()} checks the settings. */
  public static final class Builder extends SubscriberBuilder<Builder> {
    private SqsClient client;
    private ClientSettings clients = ClientSettings.DEFAULTS;
    private String queue;
    private Duration visibilityTimeout = DEFAULT_VISIBILITY_TIMEOUT;
    private Duration waitTime = DEFAULT_WAIT_TIME;
    private int maxMessages = DEFAULT_MAX_MESSAGES;

    private Builder(Intake intake) {
      super(intake, DEFAULT_CONCURRENCY);
    }
    /** The application's own SQS client; the subscriber does not close it. Its call timeout must exceed {@link #waitTime}. */
    public Builder client(SqsClient client) {
      this.client = Objects.requireNonNull(client, "client must not be null");
      return this;
    }

    /** Where SQS is, for an SQS-compatible server such as {@code http://localhost:9324}. Default: AWS's endpoint for the region. */
    public Builder endpoint(String endpoint) {
      this.clients = clients.withEndpoint(endpoint);
      return this;
    }

    /** The AWS region, such as {@code eu-west-1}. Default: the SDK's chain (AWS_REGION, profiles). */
    public Builder region(String region) {
      this.clients = clients.withRegion(region);
      return this;
    }

    /** Fixed credentials. Default: the SDK's chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, profiles, roles). */
    public Builder credentials(String accessKeyId, String secretAccessKey) {
      this.clients = clients.withCredentials(accessKeyId, secretAccessKey);
      return this;
    }

    /** The queue to receive from, by name or URL. Required; it must exist. */
    public Builder queue(String queue) {
      this.queue = queue;
      return this;
    }

    /**
     * How long SQS hides a received message from other receivers: after a crash, the delay before
     * it comes again. Extended while the message is in hand. Default 30 s, 2 s to 12 h, whole seconds.
     */
    public Builder visibilityTimeout(Duration visibilityTimeout) {
      this.visibilityTimeout = visibilityTimeout;
      return this;
    }

    /**
     * Long-poll wait of one receive, and so the longest a {@link SqsSubscriber#close()} waits for a
     * receive under way. Default 10 s, 0 to 20 s (SQS's longest; ElasticMQ takes at most 19 s),
     * whole seconds.
     */
    public Builder waitTime(Duration waitTime) {
      this.waitTime = waitTime;
      return this;
    }

    /** Messages per receive. Default {@value #DEFAULT_MAX_MESSAGES}, 1 to 10. */
    public Builder maxMessages(int maxMessages) {
      this.maxMessages = maxMessages;
      return this;
    }

    /** Checks the settings and builds the subscriber; it reaches SQS on {@link SqsSubscriber#start()}. */
    public SqsSubscriber build() {
      SqsClientVersion.check(); // says so when the build picked an older SDK than txbox is tested with
      SubscriberBuilder.Shared shared = checkShared(SqsSubscriber.class);
      clients.check();
      if (queue == null || queue.isBlank()) {
        throw new IllegalArgumentException("queue must name the SQS queue to receive from, such as orders.fifo");
      }
      if (visibilityTimeout == null || visibilityTimeout.compareTo(Duration.ofSeconds(2)) < 0
          || visibilityTimeout.compareTo(MAX_VISIBILITY_TIMEOUT) > 0 || visibilityTimeout.toMillisPart() != 0) {
        throw new IllegalArgumentException("visibilityTimeout must be whole seconds, >= 2s and <= 12h, was "
            + visibilityTimeout);
      }
      if (waitTime == null || waitTime.isNegative() || waitTime.compareTo(MAX_WAIT_TIME) > 0
          || waitTime.toMillisPart() != 0) {
        throw new IllegalArgumentException("waitTime must be whole seconds, >= 0s and <= 20s, was " + waitTime);
      }
      if (maxMessages < 1 || maxMessages > DEFAULT_MAX_MESSAGES) {
        throw new IllegalArgumentException("maxMessages must be >= 1 and <= 10, was " + maxMessages);
      }
      return new SqsSubscriber(this, shared);
    }
  }
}
