package io.txbox.spi.support;

import io.txbox.Inbox;
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import io.txbox.spi.Intake;
import io.txbox.spi.Transport;
import java.time.Duration;
import java.util.Objects;

/**
 * The settings every subscriber shares, written once for every broker: the retry policy and what
 * comes after it, the batch size, the concurrency and the drain timeout, checked together and
 * turned into the subscriber's {@link DeliveryLoop}. Each broker's builder extends it with its
 * own settings.
 *
 * <pre>{@code
 * KafkaSubscriber.builder(inbox, "inventory", handler)
 *     .bootstrapServers("kafka:9092").topics("orders")        // the broker's own
 *     .retryPolicy(RetryPolicy.builder().maxAttempts(5).build())
 *     .whenExhausted(WhenExhausted.DEAD_LETTER)
 *     .batchSize(100).concurrency(4).drainTimeout(Duration.ofSeconds(30))   // shared, here
 *     .build();
 * }</pre>
 *
 * @param <B> the broker's builder, which each setter returns
 */
public abstract class SubscriberBuilder<B extends SubscriberBuilder<B>> {
  /** Default most messages taken in one database transaction. */
  public static final int DEFAULT_BATCH_SIZE = 100;
  /** Most threads a subscriber handles messages on. */
  public static final int MAX_CONCURRENCY = 64;
  /** Default time {@code close()} waits for the messages in hand. */
  public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(30);
  private final Intake intake;
  private RetryPolicy retryPolicy = RetryPolicy.defaults();
  private WhenExhausted whenExhausted = WhenExhausted.DEAD_LETTER;
  private int batchSize = DEFAULT_BATCH_SIZE;
  private int concurrency;
  private Duration drainTimeout = DEFAULT_DRAIN_TIMEOUT;

  /** @param defaultConcurrency the broker's default {@link #concurrency} */
  protected SubscriberBuilder(Intake intake, int defaultConcurrency) {
    this.intake = Objects.requireNonNull(intake, "intake must not be null");
    this.concurrency = defaultConcurrency;
  }

  /**
   * Backoff between attempts at a failing message, how many attempts, and which errors are
   * permanent. Default {@link RetryPolicy#defaults()}.
   */
  public B retryPolicy(RetryPolicy retryPolicy) {
    this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy must not be null");
    return self();
  }

  /** What becomes of a message the retry policy gives up on. Default {@link WhenExhausted#DEAD_LETTER}. */
  public B whenExhausted(WhenExhausted whenExhausted) {
    this.whenExhausted = Objects.requireNonNull(whenExhausted, "whenExhausted must not be null");
    return self();
  }

  /**
   * Most messages taken in one database transaction, all or none: those that arrived together, up
   * to this many. A handler failing in a batch rolls it back, and the failed message is retried
   * under the retry policy as if it had come alone. 1 takes each alone. Default
   * {@value #DEFAULT_BATCH_SIZE}, at most {@value IntakeBatches#MAX_BATCH_SIZE}.
   */
  public B batchSize(int batchSize) {
    this.batchSize = batchSize;
    return self();
  }

  /**
   * How many threads handle messages at once, each with a database connection while it handles
   * one: different keys (partitions, for Kafka) in parallel, each key's messages in order. At most
   * {@value #MAX_CONCURRENCY}; the default is the broker's.
   */
  public B concurrency(int concurrency) {
    this.concurrency = concurrency;
    return self();
  }

  /**
   * How long {@code close()} waits for the messages whose intake transaction is under way; the
   * others are handed back to the broker at once. Default 30 s.
   */
  public B drainTimeout(Duration drainTimeout) {
    this.drainTimeout = drainTimeout;
    return self();
  }

  /**
   * Every shared setting at once, as a front end was given them: the way a {@link Transport}
   * builds its subscriber. The intake is the builder's own.
   */
  public B subscription(Transport.Subscription subscription) {
    return retryPolicy(subscription.retryPolicy())
        .whenExhausted(subscription.whenExhausted())
        .batchSize(subscription.batchSize())
        .concurrency(subscription.concurrency())
        .drainTimeout(subscription.drainTimeout());
  }

  /** The consumer's name, the intake's: it scopes deduplication. */
  protected String consumerName() {
    return intake.consumer();
  }

  /**
   * The shared settings and the subscriber's delivery loop, from a broker builder's
   * {@code build()}.
   *
   * @param consumerName the intake's consumer name
   * @param concurrency threads that handle messages
   * @param drainTimeout how long {@code close()} waits for the messages under way
   * @param loop the delivery loop, logging under the subscriber's name
   */
  public record Shared(Intake intake, String consumerName, int concurrency, Duration drainTimeout,
      DeliveryLoop loop) {}

  /**
   * Checks the shared settings, naming the one that is wrong, and makes the delivery loop, which
   * logs under {@code subscriber}'s name; for the broker builder's {@code build()}.
   */
  protected Shared checkShared(Class<?> subscriber) {
    Inbox.requireConsumerName(consumerName());
    if (batchSize < 1 || batchSize > IntakeBatches.MAX_BATCH_SIZE) {
      throw new IllegalArgumentException(
          "batchSize must be >= 1 and <= " + IntakeBatches.MAX_BATCH_SIZE + ", was " + batchSize);
    }
    if (concurrency < 1 || concurrency > MAX_CONCURRENCY) {
      throw new IllegalArgumentException("concurrency must be >= 1 and <= " + MAX_CONCURRENCY + ", was " + concurrency);
    }
    if (drainTimeout == null || drainTimeout.isNegative()) {
      throw new IllegalArgumentException("drainTimeout must be >= 0, was " + drainTimeout);
    }
    return new Shared(intake, consumerName(), concurrency, drainTimeout,
        new DeliveryLoop(intake, retryPolicy, whenExhausted, batchSize, subscriber));
  }

  @SuppressWarnings("unchecked")
  private B self() {
    return (B) this;
  }
}
