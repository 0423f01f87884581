package io.txbox.micrometer;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A figure a gauge shows, read from the database at most once per refresh on a thread of its own:
 * a scrape waits for a reading under way at most {@code readWait}, then answers from the last one,
 * so that a database that hangs never makes the whole scrape time out (and the process look down).
 * A reading the database refuses shows as empty (the gauge's NaN): a gap rather than an old figure.
 *
 * <pre>{@code
 * LatestReading<Backlog> backlog = new LatestReading<>("the backlog", () -> store.backlog("default", 1000),
 *     Duration.ofSeconds(10), Duration.ofMillis(500), clock, LatestReading.readerThread("txbox-backlog-reader"));
 * }</pre>
 */
final class LatestReading<T> {
  private static final Logger log = LoggerFactory.getLogger(LatestReading.class);

  private final String what;
  private final Supplier<Optional<T>> read;
  private final Duration refresh;
  private final Duration readWait;
  private final Clock clock;
  private final ExecutorService reader;
  private Instant startedAt = Instant.MIN;
  private Instant readAt;
  private Future<?> underWay;
  private volatile Optional<T> latest = Optional.empty();
  private volatile boolean failed;

  LatestReading(String what, Supplier<Optional<T>> read, Duration refresh, Duration readWait, Clock clock,
      ExecutorService reader) {
    this.what = what;
    this.read = read;
    this.refresh = refresh;
    this.readWait = readWait;
    this.clock = clock;
    this.reader = reader;
  }

  /** One daemon thread for the readings of a set of gauges: one that hangs holds up only the others. */
  static ExecutorService readerThread(String name) {
    return Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * The latest figure, after a new reading if one is due and answers within {@code readWait} of
   * its start: the gauges of one scrape that share a hanging reading wait for it once in all, not
   * once each.
   */
  Optional<T> get() {
    Future<?> reading = startIfDue();
    if (reading != null) {
      try {
        reading.get(Math.max(0, readWait.toMillis() - sinceStartMillis()), TimeUnit.MILLISECONDS);
      } catch (TimeoutException | ExecutionException e) {
        // still under way: the last figure is shown, and its age says how old it is
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return latest;
  }

  private synchronized long sinceStartMillis() {
    return Duration.between(startedAt, clock.instant()).toMillis();
  }

  private synchronized Future<?> startIfDue() {
    Instant now = clock.instant();
    if ((underWay == null || underWay.isDone()) && !startedAt.plus(refresh).isAfter(now)) {
      startedAt = now;
      underWay = reader.submit(this::read);
    }
    return underWay;
  }

  private void read() {
    try {
      latest = read.get();
      failed = false;
      synchronized (this) {
        readAt = clock.instant();
      }
    } catch (RuntimeException e) {
      log.warn("Could not read {}: {}", what, e.getMessage());
      latest = Optional.empty();
      failed = true;
    }
  }

  /** How old the figure shown is; 0 before the first reading. */
  synchronized double ageMillis(Instant now) {
    return readAt == null ? 0 : Math.max(0, Duration.between(readAt, now).toMillis());
  }

  /** Whether the database refused the last reading, or has not answered one for {@code readWait}. */
  synchronized boolean unreachable(Instant now) {
    boolean hanging = underWay != null && !underWay.isDone() && startedAt.plus(readWait).isBefore(now);
    return failed || hanging;
  }
}
