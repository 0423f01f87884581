package io.txbox.cdc.internal;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * How the logical relay's loops wait when nothing is ready: the pause starts short and doubles up
 * to the idle interval, is cut to the time a delayed or retried event is due, and ends within
 * 100 ms of a stop. The stream and the catch-up from the table wait alike.
 */
final class Pacing {
  /** The first pause, and the one after any progress. */
  static final Duration MIN_PAUSE = Duration.ofNanos(100_000);

  private final BooleanSupplier running;
  private final Duration idleInterval;
  private final Clock clock;

  Pacing(BooleanSupplier running, Duration idleInterval, Clock clock) {
    this.running = running;
    this.idleInterval = idleInterval;
    this.clock = clock;
  }

  /** Whether the loop should go on. */
  boolean running() {
    return running.getAsBoolean();
  }

  /** {@code pause}, or less when an event in hand is due sooner. */
  Duration untilDue(PendingEvents pending, Duration pause) {
    Instant due = pending.nextDue();
    if (due == null) {
      return pause;
    }
    Duration left = Duration.between(clock.instant(), due);
    return left.compareTo(pause) < 0 ? (left.isNegative() ? MIN_PAUSE : left) : pause;
  }

  /** The pause after {@code pause} found nothing: twice as long, at most the idle interval. */
  Duration longer(Duration pause) {
    Duration doubled = pause.multipliedBy(2);
    return doubled.compareTo(idleInterval) > 0 ? idleInterval : doubled;
  }

  /** Sleeps, in slices short enough that a stop is seen within 100 ms. */
  void pause(Duration d) {
    long end = System.nanoTime() + d.toNanos();
    long left = d.toNanos();
    while (running() && left > 0) {
      LockSupport.parkNanos(Math.min(left, 100_000_000L));
      left = end - System.nanoTime();
    }
  }
}
