package io.txbox.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/**
 * A clock that stands still until a test moves it: to make leases run out, or retries fall due,
 * without waiting.
 *
 * <pre>{@code
 * SettableClock clock = new SettableClock(Instant.parse("2026-01-01T00:00:00Z"));
 * InMemoryOutboxStore store = new InMemoryOutboxStore(4, clock);
 * clock.advance(Duration.ofSeconds(11));   // every 10 s lease has run out
 * }</pre>
 */
public final class SettableClock extends Clock {
  private volatile Instant now;

  /** A clock that reads {@code start} until moved. */
  public SettableClock(Instant start) {
    this.now = start;
  }

  /** Moves the clock forward by {@code duration}. */
  public synchronized void advance(Duration duration) {
    now = now.plus(duration);
  }

  @Override
  public Instant instant() {
    return now;
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    throw new UnsupportedOperationException("a SettableClock is in UTC");
  }
}
