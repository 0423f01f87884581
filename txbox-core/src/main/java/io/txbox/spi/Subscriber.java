package io.txbox.spi;

/**
 * Feeds a broker's messages into an {@link io.txbox.Inbox} or {@link io.txbox.InboxQueue} and
 * acknowledges each one to the broker only after the inbox transaction that took it committed.
 * Every transport's subscriber behaves the same way, which the transport contract suite in
 * {@code txbox-testkit} proves against each real broker:
 *
 * <ul>
 *   <li>a message is acknowledged after its inbox commit, never before, so a crash in between
 *       redelivers it and the inbox absorbs it as a duplicate;
 *   <li>a message whose handler fails is retried with backoff and not skipped, and the messages
 *       of its key wait behind it;
 *   <li>once the {@link io.txbox.RetryPolicy} gives up on a message, it is dead-lettered in the
 *       inbox and its key parked: later messages of the key are stored behind it, in order, and
 *       other keys flow ({@link io.txbox.WhenExhausted#DEAD_LETTER}, the default); or it blocks
 *       its key, retried until a fixed handler takes it ({@link io.txbox.WhenExhausted#BLOCK});
 *   <li>{@link #close()} finishes the message in hand, acknowledges what was handled and stops.
 * </ul>
 *
 * <pre>{@code
 * Subscriber subscriber = NatsSubscriber.builder(inbox, "inventory", handler)
 *     .servers("nats://localhost:4222").stream("ORDERS")
 *     .build()
 *     .start();
 * ...
 * subscriber.close();
 * }</pre>
 */
public interface Subscriber extends AutoCloseable {

  /** Connects and starts consuming in the background; returns this subscriber. */
  Subscriber start();

  /** Messages handled and committed by this subscriber (queued, for a queue's subscriber). */
  long processed();

  /** Redelivered messages the inbox recognised, which the handler did not see again. */
  long duplicates();

  /** Messages stored behind a dead message of their key, acknowledged without being handled. */
  long parked();

  /** Messages given up on after their retries: kept as dead in the inbox, their keys parked. */
  long deadLettered();

  /** Messages skipped because they could not be read as messages (a malformed txbox header). */
  long rejected();

  /**
   * Attempts that failed (the handler threw, the database failed) and were retried; with
   * {@link #processed()}, the retry-to-success ratio.
   */
  long failures();

  /**
   * Whether the last step of its background loop failed (the broker or the database unreachable,
   * a bug): the loop goes on and tries again; for health checks.
   */
  boolean isTroubled();

  /** Finishes the message in hand, acknowledges what was handled and disconnects. */
  @Override
  void close();
}
