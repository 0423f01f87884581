package io.txbox.server.console;

import java.time.Duration;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The log lines of failed and refused sign-ins, at most {@value #LINES_PER_MINUTE} a minute: a
 * client guessing passwords in a loop would otherwise write a line per guess (105,476 in 20 s) and
 * fill the disk or bury everything else. What goes unlogged is counted, and the count is logged
 * with the next line after its minute ends; the throttle counts every attempt either way.
 *
 * <pre>{@code
 * signInLog.warn(now, "console: failed sign-in for user '{}' from {}", user, address);
 * }</pre>
 */
final class SignInLog {
  private static final Logger log = LoggerFactory.getLogger(Console.class);
  /** Lines logged per minute; the rest are counted. */
  static final int LINES_PER_MINUTE = 20;
  private static final Duration WINDOW = Duration.ofMinutes(1);

  private Instant windowStart = Instant.EPOCH;
  private int logged;
  private long unlogged;

  /** Logs at WARN, unless this minute's lines are used up. */
  void warn(Instant now, String format, Object... arguments) {
    long skipped;
    synchronized (this) {
      if (!now.isBefore(windowStart.plus(WINDOW))) {
        windowStart = now;
        logged = 0;
      }
      if (logged >= LINES_PER_MINUTE) {
        unlogged++;
        return;
      }
      logged++;
      skipped = unlogged;
      unlogged = 0;
    }
    if (skipped > 0) {
      log.warn("console: {} more failed or refused sign-ins were not logged (at most {} lines a minute)", skipped,
          LINES_PER_MINUTE);
    }
    log.warn(format, arguments);
  }
}
