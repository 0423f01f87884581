package io.txbox.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Waits for a condition of a benchmark's own, polling every 20 ms up to {@link #LIMIT}; a
 * benchmark cannot use Awaitility's test jar.
 *
 * <pre>{@code
 * Await.until(() -> kafka.records(topic) >= events, topic + " did not reach " + events + " records");
 * }</pre>
 */
final class Await {
  /** The longest any benchmark step waits. */
  static final Duration LIMIT = Duration.ofMinutes(10);

  private Await() {}

  /** A condition to wait for; it may query a database or a broker. */
  interface Condition {
    boolean holds() throws Exception;
  }

  /** Returns once {@code condition} holds; fails with {@code failure} after {@link #LIMIT}. */
  static void until(Condition condition, String failure) throws Exception {
    long deadline = System.nanoTime() + LIMIT.toNanos();
    while (!condition.holds()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(failure + " within " + LIMIT);
      }
      TimeUnit.MILLISECONDS.sleep(20);
    }
  }

  /**
   * Waits until {@code process} has printed a line matching {@code line} to {@code log} and returns
   * the match; fails with the log when the process exits first or after {@link #LIMIT}.
   */
  static Matcher line(String name, Process process, Path log, Pattern line) throws Exception {
    long deadline = System.nanoTime() + LIMIT.toNanos();
    while (System.nanoTime() < deadline) {
      Matcher m = line.matcher(Files.readString(log));
      if (m.find()) {
        return m;
      }
      if (!process.isAlive()) {
        throw new IllegalStateException(name + " exited: " + Files.readString(log));
      }
      TimeUnit.MILLISECONDS.sleep(20);
    }
    throw new IllegalStateException(name + " did not print " + line + " within " + LIMIT + ": " + Files.readString(log));
  }
}
