package io.txbox.spi.support;

import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a background loop alive through anything one of its steps throws: a database restarting,
 * a bug, an {@link Error}. Each failure is logged with the loop's name and counted, and the loop
 * goes on; {@link #isTroubled()} says whether the last step failed, for health checks.
 *
 * <p>Every background loop of txbox and of its transports runs its steps through one, as
 * db-scheduler's {@code RunUntilShutdown} does. A scheduled executor in particular silently
 * cancels a task that throws, so a task given to one is always {@linkplain #guard wrapped}.
 *
 * <pre>{@code
 * LoopGuard guard = new LoopGuard("txbox-janitor");
 * scheduler.scheduleWithFixedDelay(guard.guard(janitor::runOnce), 60, 60, TimeUnit.SECONDS);
 * }</pre>
 */
public final class LoopGuard {
  private static final Logger log = LoggerFactory.getLogger(LoopGuard.class);

  /** One step of a loop. */
  @FunctionalInterface
  public interface Step {
    /** Does one step's work; anything it throws is caught by the guard. */
    void run() throws Exception;
  }

  private final String name;
  private final AtomicLong failures = new AtomicLong();
  private volatile boolean troubled;
  private volatile Throwable lastFailure;

  /** A guard for the loop called {@code name} in the log. */
  public LoopGuard(String name) {
    this.name = name;
  }

  /**
   * Runs {@code step}; whatever it throws is logged and counted, never rethrown. An interrupt is
   * kept as the thread's interrupt status, so the loop can see it and end.
   *
   * @return whether the step completed
   */
  public boolean attempt(Step step) {
    try {
      step.run();
      if (troubled) {
        troubled = false;
        lastFailure = null;
        log.info("{}: working again after {} failure(s) in all", name, failures.get());
      }
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (Throwable e) {
      // Even an Error: an OutOfMemoryError has freed what the step held by the time it gets here,
      // and a loop that ends silently stops delivery for good.
      boolean first = !troubled;
      troubled = true;
      lastFailure = e;
      failures.incrementAndGet();
      if (first) {
        log.warn("{}: step failed, the loop goes on: {}", name, e.toString(), e);
      } else {
        log.warn("{}: step failed again, the loop goes on: {}", name, e.toString());
      }
      return false;
    }
  }

  /** {@code task} wrapped so that it never throws: for scheduled executors. */
  public Runnable guard(Step task) {
    return () -> attempt(task);
  }

  /** Whether the last step failed. */
  public boolean isTroubled() {
    return troubled;
  }

  /** What the last step threw, while {@linkplain #isTroubled() troubled}; {@code null} otherwise. */
  public Throwable lastFailure() {
    return lastFailure;
  }

  /** How many steps failed since the guard was made. */
  public long failures() {
    return failures.get();
  }

  /** The loop's name. */
  public String name() {
    return name;
  }
}
