package io.txbox.internal;

import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import io.txbox.spi.InboxQueueStore;
import io.txbox.spi.InboxStore;
import io.txbox.spi.support.LoopGuard;
import io.txbox.spi.QueuedMessage;
import io.txbox.spi.support.Rollback;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker threads of an {@link io.txbox.InboxQueue}. Each takes one message at a time in a
 * transaction that holds its key's lock: the handler runs after a savepoint, so a failure undoes
 * the handler's work but still records the attempt, while the key stays locked and no other
 * worker can start the same message meanwhile.
 */
public final class QueueWorkers {
  private static final Logger log = LoggerFactory.getLogger(QueueWorkers.class);

  /** What the workers need; validated by the InboxQueue builder. */
  public record Settings(String consumer, int workers, Duration gapTimeout, Duration pollInterval,
      RetryPolicy retryPolicy, WhenExhausted whenExhausted) {}

  private final DataSource dataSource;
  private final InboxQueueStore store;
  private final InboxHandler handler;
  private final Settings settings;
  private final WakeUp wakeUp = new WakeUp();
  private final AtomicLong processed = new AtomicLong();
  private final AtomicLong deadLettered = new AtomicLong();
  private final List<Thread> threads = new ArrayList<>();
  private volatile boolean running = true;

  public QueueWorkers(DataSource dataSource, InboxQueueStore store, InboxHandler handler, Settings settings) {
    this.dataSource = dataSource;
    this.store = store;
    this.handler = handler;
    this.settings = settings;
  }

  public synchronized void start() {
    if (!threads.isEmpty()) {
      throw new IllegalStateException("the inbox queue of " + settings.consumer() + " is already started");
    }
    for (int i = 0; i < settings.workers(); i++) {
      Thread t = new Thread(this::work, "txbox-inbox-" + settings.consumer() + "-" + i);
      threads.add(t);
      t.start();
    }
  }

  /** Something was queued: an idle worker looks now instead of at its next poll. */
  public void signal() {
    wakeUp.signal();
  }

  public long processed() {
    return processed.get();
  }

  public long deadLettered() {
    return deadLettered.get();
  }

  /** Stops taking messages and waits up to {@code drainTimeout} for those in hand. */
  public synchronized void close(Duration drainTimeout) {
    running = false;
    threads.forEach(t -> wakeUp.signal());
    long deadline = System.nanoTime() + drainTimeout.toNanos();
    try {
      for (Thread t : threads) {
        t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    threads.clear();
  }

  private void work() {
    LoopGuard guard = new LoopGuard("txbox inbox queue " + settings.consumer() + " worker");
    while (running) {
      // A failure (the database gone, an Error from a handler) is logged by the guard and counts
      // as nothing taken: the worker waits a poll interval and tries again.
      boolean[] tookOne = {false};
      guard.attempt(() -> tookOne[0] = takeOne());
      if (Thread.currentThread().isInterrupted()) {
        return;
      }
      if (!tookOne[0]) {
        try {
          wakeUp.await(settings.pollInterval());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /** Claims, processes and commits one message; false when none was ready. */
  private boolean takeOne() throws SQLException {
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      try {
        Optional<QueuedMessage> claimed = store.claim(tx, settings.consumer(), settings.gapTimeout());
        if (claimed.isEmpty()) {
          tx.rollback();
          return false;
        }
        Outcome outcome = process(tx, claimed.get());
        tx.commit();
        // Counted after the commit: whoever reads a count may then read what the transaction wrote.
        if (outcome == Outcome.PROCESSED) {
          processed.incrementAndGet();
        } else if (outcome == Outcome.DEAD) {
          deadLettered.incrementAndGet();
        }
        return true;
      } catch (SQLException | RuntimeException e) {
        Rollback.after(tx, e);
        throw e;
      }
    }
  }

  /** What became of a claimed message in its transaction. */
  private enum Outcome { PROCESSED, RETRY_LATER, DEAD }

  /** Runs the handler under a savepoint; when it fails, the failure is recorded instead. */
  private Outcome process(Connection tx, QueuedMessage m) throws SQLException {
    warnIfOutOfSequence(m);
    Savepoint beforeHandler = tx.setSavepoint();
    try {
      handler.handle(tx, m.message(), Inbox.idempotencyKey(settings.consumer(), m.message().id()));
      store.complete(tx, settings.consumer(), m);
      return Outcome.PROCESSED;
    } catch (Exception e) {
      tx.rollback(beforeHandler);
      return recordFailure(tx, m, e);
    }
  }

  private Outcome recordFailure(Connection tx, QueuedMessage m, Exception e) throws SQLException {
    int failed = m.failedAttempts() + 1;
    String error = InboxStore.describe(e);
    if (settings.whenExhausted() == WhenExhausted.DEAD_LETTER && settings.retryPolicy().givesUp(e, failed)) {
      store.deadLetter(tx, settings.consumer(), m, error);
      log.error("inbox queue {}: message {} ({}) dead after {} attempts; key {} is parked, its later messages"
          + " wait behind it until it is retried or discarded: {}", settings.consumer(), m.message().id(),
          m.message().type(), failed, m.queueKey(), error);
      return Outcome.DEAD;
    }
    Duration delay = settings.retryPolicy().delayAfter(failed, ThreadLocalRandom.current());
    store.retryLater(tx, settings.consumer(), m, Instant.now().plus(delay), error);
    log.warn("inbox queue {}: message {} ({}) failed (attempt {}), retrying in {} ms: {}", settings.consumer(),
        m.message().id(), m.message().type(), failed, delay.toMillis(), error);
    return Outcome.RETRY_LATER;
  }

  private void warnIfOutOfSequence(QueuedMessage m) {
    if (m.afterGap()) {
      long first = m.lastSequence() + 1;
      long last = m.sequence() - 1;
      log.warn("inbox queue {}: key {} waited {} ms for sequence {}; processing {} without it",
          settings.consumer(), m.queueKey(), settings.gapTimeout().toMillis(),
          first == last ? Long.toString(first) : first + " to " + last, m.sequence());
    } else if (m.late()) {
      log.warn("inbox queue {}: key {} had moved on to sequence {} when {} arrived; processing it late",
          settings.consumer(), m.queueKey(), m.lastSequence(), m.sequence());
    }
  }

}
