package io.txbox;

import io.txbox.internal.QueueWorkers;
import io.txbox.spi.InboxQueueStore;
import io.txbox.spi.Rollback;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The inbox in queue mode: {@link #enqueue} stores a received message (or recognises it as a
 * duplicate) and returns at once, so the caller can acknowledge the broker; workers process the
 * stored messages at their own pace, each in one transaction with the handler's work.
 *
 * <pre>{@code
 * InboxQueue queue = InboxQueue.builder(dataSource, PostgresInboxStore.builder().build(), "billing", handler)
 *     .workers(4)
 *     .build()
 *     .start();
 * queue.enqueue(message);   // then acknowledge the broker
 * ...
 * queue.close();            // finishes the messages in hand
 * }</pre>
 *
 * <p><b>Order per key.</b> A message waits while an earlier message of its key is unprocessed.
 * "Earlier" means a lower number in the {@value #SEQUENCE_HEADER} header (1, 2, 3, ... per key,
 * such as an aggregate's version), or, for messages without one, received earlier. When the next
 * number of a key has not arrived, the messages after it are held for {@link
 * Builder#gapTimeout(Duration)}, then processed with a warning; the missing one is processed
 * whenever it arrives. Messages without a key are not ordered.
 *
 * <p><b>Failures.</b> A handler that throws is rolled back and retried with the {@link
 * RetryPolicy}'s backoff; after its last attempt the message is kept as dead (status
 * {@code dead} in the store) and its key moves on. Messages of other keys flow meanwhile.
 */
public final class InboxQueue implements AutoCloseable {
  /** The header that carries a message's number within its key. */
  public static final String SEQUENCE_HEADER = "txbox-sequence";
  /** Default worker threads. */
  public static final int DEFAULT_WORKERS = 4;
  /** Most worker threads. */
  public static final int MAX_WORKERS = 64;
  /** Default time a key's later messages wait for a missing earlier one. */
  public static final Duration DEFAULT_GAP_TIMEOUT = Duration.ofSeconds(30);
  /** Default pause of an idle worker before it looks again (enqueue in this JVM wakes it sooner). */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(100);
  /** Default time {@link #close()} waits for the messages in hand. */
  public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(30);

  private static final Pattern CONSUMER = Pattern.compile("[A-Za-z0-9._-]{1,100}");

  /** What {@link #enqueue} did with a message. */
  public enum Enqueued {
    /** Stored; a worker will process it. */
    QUEUED,
    /** The consumer had received it before; not stored again. */
    DUPLICATE
  }

  private final DataSource dataSource;
  private final InboxQueueStore store;
  private final String consumer;
  private final Duration drainTimeout;
  private final QueueWorkers workers;

  private InboxQueue(Builder b) {
    this.dataSource = b.dataSource;
    this.store = b.store;
    this.consumer = b.consumer;
    this.drainTimeout = b.drainTimeout;
    this.workers = new QueueWorkers(b.dataSource, b.store, b.handler,
        new QueueWorkers.Settings(b.consumer, b.workers, b.gapTimeout, b.pollInterval, b.retryPolicy));
  }

  /** A builder for the queue of {@code consumer}, processing with {@code handler}. */
  public static Builder builder(DataSource dataSource, InboxQueueStore store, String consumer, InboxHandler handler) {
    return new Builder(dataSource, store, consumer, handler);
  }

  /** Starts the workers. */
  public InboxQueue start() {
    workers.start();
    return this;
  }

  /** Stores {@code message} in a transaction of its own and commits; acknowledge the broker after. */
  public Enqueued enqueue(Message message) throws SQLException {
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      try {
        Enqueued result = enqueue(tx, message);
        tx.commit();
        workers.signal();
        return result;
      } catch (SQLException | RuntimeException e) {
        Rollback.after(tx, e);
        throw e;
      }
    }
  }

  /**
   * Stores {@code message} inside the caller's transaction; the caller commits. The workers find
   * it at their next look, within the poll interval, since they cannot know when that commit comes.
   */
  public Enqueued enqueue(Connection transaction, Message message) throws SQLException {
    Objects.requireNonNull(message, "message must not be null");
    String queueKey = message.key() != null ? message.key() : "txbox-unkeyed:" + message.id();
    boolean stored = store.enqueue(transaction, consumer, message, queueKey, sequence(message));
    return stored ? Enqueued.QUEUED : Enqueued.DUPLICATE;
  }

  /** The consumer this queue receives and processes for. */
  public String consumer() {
    return consumer;
  }

  /** Messages processed by this queue's workers. */
  public long processed() {
    return workers.processed();
  }

  /** Messages that failed their last attempt here. */
  public long deadLettered() {
    return workers.deadLettered();
  }

  /** Stops the workers, waiting up to the drain timeout for the messages in hand. */
  @Override
  public void close() {
    workers.close(drainTimeout);
  }

  private static Long sequence(Message message) {
    String value = message.headers().get(SEQUENCE_HEADER);
    if (value == null) {
      return null;
    }
    try {
      long sequence = Long.parseLong(value.trim());
      if (sequence >= 1) {
        return sequence;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException("message " + message.id() + ": header " + SEQUENCE_HEADER
        + " must be a whole number >= 1, was '" + value + "'");
  }

  /** Builds an {@link InboxQueue}; {@link #build()} checks every setting. */
  public static final class Builder {
    private final DataSource dataSource;
    private final InboxQueueStore store;
    private final String consumer;
    private final InboxHandler handler;
    private int workers = DEFAULT_WORKERS;
    private Duration gapTimeout = DEFAULT_GAP_TIMEOUT;
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private Duration drainTimeout = DEFAULT_DRAIN_TIMEOUT;
    private RetryPolicy retryPolicy = RetryPolicy.defaults();

    private Builder(DataSource dataSource, InboxQueueStore store, String consumer, InboxHandler handler) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
      this.store = Objects.requireNonNull(store, "store must not be null");
      this.consumer = consumer;
      this.handler = Objects.requireNonNull(handler, "handler must not be null");
    }

    /** Worker threads, each using one connection while it works. Default {@value #DEFAULT_WORKERS}, 1 to {@value #MAX_WORKERS}. */
    public Builder workers(int workers) {
      this.workers = workers;
      return this;
    }

    /** How long a key's later messages wait for a missing earlier one. Default 30 s, 0 to 1 day. */
    public Builder gapTimeout(Duration gapTimeout) {
      this.gapTimeout = gapTimeout;
      return this;
    }

    /** Pause of an idle worker before it looks again. Default 100 ms, 1 ms to 1 min. */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
      return this;
    }

    /** How long {@link InboxQueue#close()} waits for the messages in hand. Default 30 s. */
    public Builder drainTimeout(Duration drainTimeout) {
      this.drainTimeout = drainTimeout;
      return this;
    }

    /** Backoff and attempts before a message is dead. Default {@link RetryPolicy#defaults()}. */
    public Builder retryPolicy(RetryPolicy retryPolicy) {
      this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy must not be null");
      return this;
    }

    /** Checks the settings and builds the queue; {@link InboxQueue#start()} starts its workers. */
    public InboxQueue build() {
      if (consumer == null || !CONSUMER.matcher(consumer).matches()) {
        throw new IllegalArgumentException(
            "consumer must be 1 to 100 characters of A-Z a-z 0-9 . _ -, was '" + consumer + "'");
      }
      if (workers < 1 || workers > MAX_WORKERS) {
        throw new IllegalArgumentException("workers must be >= 1 and <= " + MAX_WORKERS + ", was " + workers);
      }
      requireBetween("gapTimeout", gapTimeout, Duration.ZERO, Duration.ofDays(1));
      requireBetween("pollInterval", pollInterval, Duration.ofMillis(1), Duration.ofMinutes(1));
      requireBetween("drainTimeout", drainTimeout, Duration.ZERO, Duration.ofHours(1));
      return new InboxQueue(this);
    }

    private static void requireBetween(String name, Duration value, Duration min, Duration max) {
      if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
        throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", was " + value);
      }
    }
  }
}
