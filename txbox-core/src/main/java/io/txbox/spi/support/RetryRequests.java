package io.txbox.spi.support;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Carries out operators' requests to retry a consumer's parked keys ({@code txbox dead-letters
 * retry --consumer}) while its subscriber runs: every {@value #INTERVAL_MILLIS} ms, on a thread of
 * its own, it runs the requests waiting in the database. Retrying a key on this thread is safe
 * beside the subscriber's own: while a key is parked the subscriber stores its messages behind it,
 * and the retry holds the key's lock, so the key's order holds.
 *
 * <pre>{@code
 * RetryRequests retries = RetryRequests.start(intake.consumer(), intake::runRetryRequests); // in start()
 * retries.close();                                      // in its close()
 * }</pre>
 */
public final class RetryRequests implements AutoCloseable {
  /** How often the database is asked for requests: one indexed query, so a second costs nothing. */
  public static final long INTERVAL_MILLIS = 1_000;

  private final ScheduledExecutorService scheduler;
  private final LoopGuard guard;

  private RetryRequests(String consumer, LoopGuard.Step step) {
    String name = "txbox-retry-requests-" + consumer;
    this.guard = new LoopGuard(name);
    this.scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    });
    scheduler.scheduleWithFixedDelay(guard.guard(step), INTERVAL_MILLIS, INTERVAL_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** Runs {@code step}, which carries out the requests of {@code consumer}, until closed. */
  public static RetryRequests start(String consumer, LoopGuard.Step step) {
    return new RetryRequests(consumer, step);
  }

  /** Whether the last look for requests failed (the database unreachable, say). */
  public boolean isTroubled() {
    return guard.isTroubled();
  }

  /** Stops looking; a retry under way gets a few seconds to finish its current message. */
  @Override
  public void close() {
    scheduler.shutdown();
    try {
      scheduler.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
