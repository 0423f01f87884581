package io.txbox.spi.support;

import io.txbox.Receipt;
import io.txbox.spi.Subscriber;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The counts every {@link Subscriber} reports, kept the same way by each transport.
 *
 * <pre>{@code
 * counters.countReceived(intake.take(message));   // processed, duplicate or parked
 * ...
 * public long processed() { return counters.processed(); }
 * }</pre>
 */
public final class SubscriberCounters {
  private final AtomicLong processed = new AtomicLong();
  private final AtomicLong duplicates = new AtomicLong();
  private final AtomicLong parked = new AtomicLong();
  private final AtomicLong deadLettered = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();

  /** The intake took a message with {@code receipt}. */
  public void countReceived(Receipt receipt) {
    (switch (receipt) {
      case PROCESSED -> processed;
      case DUPLICATE -> duplicates;
      case PARKED -> parked;
    }).incrementAndGet();
  }

  /** An attempt failed. */
  public void countFailure() {
    failures.incrementAndGet();
  }

  /** A message was given up on and kept as dead. */
  public void countDeadLetter() {
    deadLettered.incrementAndGet();
  }

  /** A message could not be read and was skipped. */
  public void countRejection() {
    rejected.incrementAndGet();
  }

  /** See {@link Subscriber#processed()}. */
  public long processed() {
    return processed.get();
  }

  /** See {@link Subscriber#duplicates()}. */
  public long duplicates() {
    return duplicates.get();
  }

  /** See {@link Subscriber#parked()}. */
  public long parked() {
    return parked.get();
  }

  /** See {@link Subscriber#deadLettered()}. */
  public long deadLettered() {
    return deadLettered.get();
  }

  /** See {@link Subscriber#failures()}. */
  public long failures() {
    return failures.get();
  }

  /** See {@link Subscriber#rejected()}. */
  public long rejected() {
    return rejected.get();
  }
}
