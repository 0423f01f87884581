package io.txbox.spi.support;

import io.txbox.Message;
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import io.txbox.spi.Intake;
import io.txbox.spi.UnreadableMessageException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one delivery loop of every subscriber, whatever its broker: takes what a broker delivered
 * into the {@link Intake} in order, in batches where it can; retries a message whose handler
 * failed in hand, with the retry policy's backoff, while later messages wait behind it; once the
 * policy gives up, dead-letters it and goes on (or, with {@link WhenExhausted#BLOCK}, goes on
 * trying); and settles each message with the broker through the transport's {@link Settlement}.
 *
 * <pre>{@code
 * DeliveryLoop loop = new DeliveryLoop(intake, retryPolicy, WhenExhausted.DEAD_LETTER, 100, MySubscriber.class);
 * loop.repeatUntilClosed(guard, () -> loop.takeInOrder(fetch(), settlement));   // the transport's thread
 * loop.close();                                                                // from close()
 * }</pre>
 *
 * <p><b>Closing</b>, the same for every transport: {@link #close()} stops the loop from starting
 * another attempt and wakes a backoff at once. A message whose intake transaction is under way
 * finishes and is acknowledged; every other message in hand, the one waiting for its retry
 * included, is {@linkplain Settlement#release released} at once, so the next subscriber gets it
 * without waiting for a broker timeout, in its order. A thread interrupted while it waits does
 * the same for what it holds, and keeps its interrupt.
 */
public final class DeliveryLoop implements AutoCloseable {
  /** How long {@link #repeatUntilClosed} waits after a failed step before the next. */
  public static final Duration AFTER_FAILED_STEP = Duration.ofSeconds(1);

  /**
   * What the loop needs of a broker: how to read what it delivered, and how to settle it.
   *
   * @param <T> what the broker delivers (a record, a delivery, a message)
   */
  public interface Settlement<T> {
    /** The item's message; throws {@link IllegalArgumentException} when it is not one (unreadable). */
    Message read(T item);

    /** The message was taken into the inbox, or dead-lettered: the broker may forget it. */
    void acknowledge(T item);

    /**
     * No retry can make this item readable: leave it to the broker's own dead-lettering, and say
     * so in the log. The loop has counted it.
     */
    void reject(T item, RuntimeException why);

    /** Closing: hand these back to the broker now, for the next subscriber, in their order. */
    void release(List<T> items);

    /** Whether the item can still be settled: false once the broker took it back (its channel was lost). */
    default boolean held(T item) {
      return true;
    }

    /**
     * How often to tell the broker an item waiting for its retry is still in hand, for brokers
     * that take back what is not settled in time; null for none.
     */
    default Duration progressInterval() {
      return null;
    }

    /** Tells the broker the item is still in hand ({@link #progressInterval()}). */
    default void inProgress(T item) {}

    /** Where the item sits in the broker, for the log, such as {@code " at orders-0@42"}; may be empty. */
    default String describe(T item) {
      return "";
    }
  }

  private final Logger log;
  private final Intake intake;
  private final Retries retries;
  private final IntakeBatches batches;
  private final SubscriberCounters counters = new SubscriberCounters();
  private final CountDownLatch closing = new CountDownLatch(1);

  /**
   * @param batchSize most messages per intake transaction; 1 takes each alone
   * @param subscriber the subscriber's class, whose name the loop logs under
   */
  public DeliveryLoop(Intake intake, RetryPolicy retryPolicy, WhenExhausted whenExhausted, int batchSize,
      Class<?> subscriber) {
    this.intake = Objects.requireNonNull(intake, "intake must not be null");
    this.retries = new Retries(intake, retryPolicy, whenExhausted);
    this.batches = new IntakeBatches(intake, batchSize, counters);
    this.log = LoggerFactory.getLogger(subscriber);
  }

  /** What the subscriber reports: received, duplicates, parked, dead-lettered, failures, rejected. */
  public SubscriberCounters counters() {
    return counters;
  }

  /** Whether {@link #close()} has not been called. */
  public boolean isOpen() {
    return closing.getCount() > 0;
  }

  /**
   * Runs {@code step} under {@code guard} until closed or the thread is interrupted; after a
   * failed step (the broker or the database gone, a bug: logged by the guard) it waits
   * {@link #AFTER_FAILED_STEP}, or less once closing.
   */
  public void repeatUntilClosed(LoopGuard guard, LoopGuard.Step step) {
    while (isOpen() && !Thread.currentThread().isInterrupted()) {
      if (!guard.attempt(step) && closedWithin(AFTER_FAILED_STEP)) {
        return;
      }
    }
  }

  /** Waits up to {@code d}; true when closing, or when the thread was interrupted (which it keeps). */
  public boolean closedWithin(Duration d) {
    try {
      return closing.await(Math.max(0, d.toNanos()), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return true;
    }
  }

  /**
   * Takes {@code items} in their order: in batches where it can, one at a time from a failed
   * message on, each failing one retried in hand until it is taken or dead-lettered. Returns when
   * all are settled, or when closing, after releasing those not settled.
   */
  public <T> void takeInOrder(List<T> items, Settlement<T> broker) {
    int next = 0;
    if (isOpen() && !Thread.currentThread().isInterrupted()) {
      IntakeBatches.Taken taken = batches.take(items, broker::read, batch -> batch.forEach(broker::acknowledge));
      next = taken.count();
      if (taken.failure() != null) {
        T failed = items.get(next);
        if (!retryInHand(failed, broker.read(failed), taken.failure(), broker)) {
          broker.release(items.subList(next, items.size()));
          return;
        }
        next++;
      }
    }
    for (; next < items.size(); next++) {
      if (!takeInHand(items.get(next), broker)) {
        broker.release(items.subList(next, items.size()));
        return;
      }
    }
  }

  /** Takes one item until it is settled; false when closing stopped it first. */
  private <T> boolean takeInHand(T item, Settlement<T> broker) {
    Message message;
    try {
      message = broker.read(item);
    } catch (IllegalArgumentException e) {
      reject(item, e, broker);
      return true;
    }
    return retryInHand(item, message, null, broker);
  }

  /**
   * Takes {@code message} until it is taken, rejected or dead-lettered, or its item is no longer
   * held; {@code failure}, when not null, is an attempt that already failed (in a batch). False
   * when closing (or an interrupt) stopped it before it was settled.
   */
  private <T> boolean retryInHand(T item, Message message, Throwable failure, Settlement<T> broker) {
    Retries.Attempts attempts = null;
    while (broker.held(item)) {
      if (!isOpen() || Thread.currentThread().isInterrupted()) {
        return false;
      }
      if (failure == null) {
        try {
          take(message);
          broker.acknowledge(item);
          return true;
        } catch (UnreadableMessageException e) {
          reject(item, e, broker);
          return true;
        } catch (Exception | Error e) {
          failure = e;
        }
      }
      attempts = attempts != null ? attempts : attemptsAt(message);
      Optional<Duration> wait = failed(attempts, failure, broker.describe(item));
      if (wait.isEmpty()) {
        broker.acknowledge(item);
        return true;
      }
      if (!backOff(item, wait.get(), broker)) {
        return false;
      }
      failure = null;
    }
    return true; // the broker took it back: it comes again
  }

  /** Waits {@code delay}, telling the broker the item is still in hand as often as it needs; false when closing. */
  private <T> boolean backOff(T item, Duration delay, Settlement<T> broker) {
    Duration beat = broker.progressInterval();
    long end = System.nanoTime() + delay.toNanos();
    while (System.nanoTime() < end) {
      long left = end - System.nanoTime();
      Duration wait = Duration.ofNanos(beat == null ? left : Math.min(left, beat.toNanos()));
      if (closedWithin(wait)) {
        return false;
      }
      if (beat != null && System.nanoTime() < end) {
        broker.inProgress(item);
      }
    }
    return true;
  }

  private <T> void reject(T item, RuntimeException why, Settlement<T> broker) {
    counters.countRejection();
    broker.reject(item, why);
  }

  /**
   * One attempt at {@code message}, counted by its receipt; throws what the intake threw. For
   * transports that wait for a retry without holding a thread (Kafka pauses the partition).
   */
  public void take(Message message) throws Exception {
    counters.countReceived(intake.take(message));
  }

  /**
   * Takes {@code items} from the start in batches, for transports that settle a batch their own
   * way (Kafka commits the partition's offset): as {@link IntakeBatches#take}.
   */
  public <T> IntakeBatches.Taken takeBatches(List<T> items, Function<T, Message> read, Consumer<List<T>> taken) {
    return batches.take(items, read, taken);
  }

  /** Fresh attempts at {@code message}, for {@link #failed}. */
  public Retries.Attempts attemptsAt(Message message) {
    return retries.of(message);
  }

  /**
   * Counts a failed attempt and asks the retry policy what follows: empty when the message is now
   * dead-lettered (acknowledge it), else the wait before the next attempt, which is logged.
   *
   * @param where where the message sits in the broker, for the log ({@link Settlement#describe})
   */
  public Optional<Duration> failed(Retries.Attempts attempts, Throwable failure, String where) {
    counters.countFailure();
    Optional<Duration> wait = attempts.failed(failure);
    if (wait.isEmpty()) {
      counters.countDeadLetter();
    } else {
      log.warn("subscriber {}: message {}{} failed (attempt {}), retrying in {} ms: {}", intake.consumer(),
          attempts.messageId(), where, attempts.count(), wait.get().toMillis(), failure.toString());
    }
    return wait;
  }

  /**
   * Stops the loop: no attempt starts from now on, a backoff ends at once and its message is
   * released. Does not wait; the transport waits for its threads up to its drain timeout.
   */
  @Override
  public void close() {
    closing.countDown();
  }
}
