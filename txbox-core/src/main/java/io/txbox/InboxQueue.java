package io.txbox;

import io.txbox.internal.LocalTransaction;
import io.txbox.internal.QueueWorkers;
import io.txbox.spi.InboxQueueStore;
import io.txbox.spi.InboxStore;
import io.txbox.spi.support.RetryRequests;
import io.txbox.spi.support.Rollback;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
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
 * RetryPolicy}'s backoff; meanwhile workers take other keys that are ready. After its last
 * attempt (or at once for a permanent error) the message is kept as dead and its key is parked:
 * the key's later messages wait behind it, in order, until {@link #retry} queues them again or
 * {@link #discard} drops them ({@link WhenExhausted#DEAD_LETTER}, the default). With {@link
 * WhenExhausted#BLOCK} the message is retried until it succeeds. Messages of other keys flow.
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

  /** What {@link #enqueue} did with a message. */
  public enum Enqueued {
    /** Stored; a worker will process it. */
    QUEUED,
    /** The consumer had received it before; not stored again. */
    DUPLICATE,
    /** Stored behind a dead message of its key; it is processed when the key is retried. */
    PARKED
  }

  private final DataSource dataSource;
  private final InboxQueueStore store;
  private final String consumer;
  private final Duration drainTimeout;
  private final QueueWorkers workers;
  private RetryRequests retryRequests;

  private InboxQueue(Builder b) {
    this.dataSource = b.dataSource;
    this.store = b.store;
    this.consumer = b.consumer;
    this.drainTimeout = b.drainTimeout;
    this.workers = new QueueWorkers(b.dataSource, b.store, b.handler,
        new QueueWorkers.Settings(b.consumer, b.workers, b.gapTimeout, b.pollInterval, b.retryPolicy,
            b.whenExhausted));
  }

  /** A builder for the queue of {@code consumer}, processing with {@code handler}. */
  public static Builder builder(DataSource dataSource, InboxQueueStore store, String consumer, InboxHandler handler) {
    return new Builder(dataSource, store, consumer, handler);
  }

  /** Starts the workers. */
  public synchronized InboxQueue start() {
    workers.start();
    if (retryRequests == null) {
      retryRequests = RetryRequests.start(consumer, this::runRetryRequests);
    }
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
    return switch (store.enqueue(transaction, consumer, message, InboxStore.queueKey(message), sequence(message))) {
      case NEW -> Enqueued.QUEUED;
      case DUPLICATE -> Enqueued.DUPLICATE;
      case PARKED -> Enqueued.PARKED;
    };
  }

  /** Up to {@code limit} (at most {@value Inbox#MAX_PARKED_LISTED}) parked messages, by key, in order. */
  public List<ParkedMessage> parked(int limit) throws SQLException {
    if (limit < 1 || limit > Inbox.MAX_PARKED_LISTED) {
      throw new IllegalArgumentException("limit must be between 1 and " + Inbox.MAX_PARKED_LISTED + ", was " + limit);
    }
    return inTransaction(tx -> store.parked(tx, consumer, limit));
  }

  /**
   * Queues the parked messages of {@code queueKey} again, in order and with fresh attempts, and
   * frees the key; the workers process them.
   *
   * @param queueKey the message key, or {@link ParkedMessage#queueKey()} for a message without one
   * @return how many messages were queued again
   */
  public int retry(String queueKey) throws SQLException {
    Objects.requireNonNull(queueKey, "queueKey must not be null");
    int queued = inTransaction(tx -> store.requeueParked(tx, consumer, queueKey));
    workers.signal();
    return queued;
  }

  /**
   * Drops the parked messages of {@code queueKey} and frees the key. They stay recorded, so a
   * redelivery of one is a duplicate.
   *
   * @return how many messages were dropped
   */
  public int discard(String queueKey) throws SQLException {
    Objects.requireNonNull(queueKey, "queueKey must not be null");
    return inTransaction(tx -> store.discardParked(tx, consumer, queueKey));
  }

  /**
   * Queues again the parked keys an operator asked to retry ({@link Inbox#requestRetry}, {@code
   * txbox dead-letters retry --consumer}); the queue does this every second while it runs.
   *
   * @return how many keys were queued again
   */
  public int runRetryRequests() throws SQLException {
    List<String> keys = inTransaction(tx -> store.takeRetryRequests(tx, consumer, Inbox.RETRY_REQUESTS_PER_RUN));
    for (String key : keys) {
      retry(key);
    }
    return keys.size();
  }

  private <T> T inTransaction(LocalTransaction.Work<T> work) throws SQLException {
    return LocalTransaction.run(dataSource, work);
  }

  /** The consumer this queue receives and processes for. */
  public String consumer() {
    return consumer;
  }

  /** Messages processed by this queue's workers. */
  public long processed() {
    return workers.processed();
  }

  /** Messages that failed their last attempt here and were kept as dead. */
  public long deadLettered() {
    return workers.deadLettered();
  }

  /** Stops the workers, waiting up to the drain timeout for the messages in hand. */
  @Override
  public void close() {
    RetryRequests requests;
    synchronized (this) {
      requests = retryRequests;
      retryRequests = null;
    }
    if (requests != null) {
      requests.close();
    }
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
    private WhenExhausted whenExhausted = WhenExhausted.DEAD_LETTER;

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

    /** What becomes of a message the retry policy gives up on. Default {@link WhenExhausted#DEAD_LETTER}. */
    public Builder whenExhausted(WhenExhausted whenExhausted) {
      this.whenExhausted = Objects.requireNonNull(whenExhausted, "whenExhausted must not be null");
      return this;
    }

    /** Checks the settings and builds the queue; {@link InboxQueue#start()} starts its workers. */
    public InboxQueue build() {
      Inbox.requireConsumerName(consumer);
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
