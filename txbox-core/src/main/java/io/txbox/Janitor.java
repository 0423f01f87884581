package io.txbox;

import io.txbox.spi.JanitorStore;
import io.txbox.spi.support.LoopGuard;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Retention: removes outbox events every subscription has relayed once they are older than the
 * outbox retention, and inbox records older than the dedup window. Deletes run in batches, each
 * its own short transaction, so writers are never blocked for long; one janitor works at a time
 * across instances, the others skip. On a store that keeps the outbox in partitions (PostgreSQL's
 * {@code outboxPartitionSize}), the janitor drops whole partitions instead and creates the next
 * ones ahead of the writers.
 *
 * <pre>{@code
 * Janitor janitor = Janitor.builder(store)
 *     .outboxRetention(Duration.ofDays(1))
 *     .inboxRetention(Duration.ofDays(30))
 *     .build()
 *     .start();                  // every interval, in the background
 * Janitor.Cleanup done = janitor.runOnce();
 * }</pre>
 *
 * <p><b>The dedup window.</b> A message redelivered after its inbox record was removed is processed
 * again. Keep {@code inboxRetention} longer than any redelivery can come late: broker retention,
 * consumer lag, replays. The default, 30 days, covers Kafka's default 7-day retention with room.
 * Longer costs only disk.
 *
 * <p><b>Abandoned subscriptions</b> hold outbox retention back: events are kept until every
 * subscription has relayed them. Delete a subscription's rows from {@code txbox_subscription} when
 * it is gone for good.
 */
public final class Janitor implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Janitor.class);

  /** Default age after which relayed outbox events are removed: 1 day. */
  public static final Duration DEFAULT_OUTBOX_RETENTION = Duration.ofDays(1);
  /** Default dedup window of the inbox: 30 days. */
  public static final Duration DEFAULT_INBOX_RETENTION = Duration.ofDays(30);
  /** Default rows per delete transaction. */
  public static final int DEFAULT_BATCH_SIZE = 5_000;
  /** Default most batches per table and run, so that one run ends. */
  public static final int DEFAULT_MAX_BATCHES = 200;
  /** Default time between runs. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofMinutes(1);

  /** What one run removed. */
  public record Cleanup(long outboxEvents, long inboxRecords, boolean skipped) {}

  /**
   * What this janitor did since it was built, runs in the background and {@link #runOnce()} alike:
   * for meters ({@code JanitorMeters} in txbox-micrometer).
   *
   * @param outboxEvents relayed outbox events removed
   * @param inboxRecords inbox records removed
   * @param failures runs that failed (the database could not be reached, say)
   * @param lastSuccess when the last run that did not fail ended; empty before the first
   */
  public record Totals(long outboxEvents, long inboxRecords, long failures, Optional<Instant> lastSuccess) {}

  private final JanitorStore store;
  private final Duration outboxRetention;
  private final Duration inboxRetention;
  private final int batchSize;
  private final int maxBatches;
  private final Duration interval;
  private final LoopGuard guard = new LoopGuard("txbox janitor");
  private final LongAdder outboxDeleted = new LongAdder();
  private final LongAdder inboxDeleted = new LongAdder();
  private final LongAdder failures = new LongAdder();
  private volatile Instant lastSuccess;
  private ScheduledExecutorService scheduler;

  private Janitor(Builder b) {
    this.store = b.store;
    this.outboxRetention = b.outboxRetention;
    this.inboxRetention = b.inboxRetention;
    this.batchSize = b.batchSize;
    this.maxBatches = b.maxBatches;
    this.interval = b.interval;
  }

  /** A builder over {@code store}, with the defaults above. */
  public static Builder builder(JanitorStore store) {
    return new Builder(store);
  }

  /** Runs now, batch after batch, until nothing is left or the batch limit is reached. */
  public Cleanup runOnce() {
    try {
      long outbox = drain(() -> store.deleteRelayed(outboxRetention, batchSize));
      long inbox = drain(() -> store.deleteInboxRecords(inboxRetention, batchSize));
      Cleanup done = new Cleanup(Math.max(0, outbox), Math.max(0, inbox), outbox < 0 || inbox < 0);
      outboxDeleted.add(done.outboxEvents());
      inboxDeleted.add(done.inboxRecords());
      lastSuccess = Instant.now();
      return done;
    } catch (RuntimeException e) {
      failures.increment();
      throw e;
    }
  }

  /** What it did so far; see {@link Totals}. */
  public Totals totals() {
    return new Totals(outboxDeleted.sum(), inboxDeleted.sum(), failures.sum(), Optional.ofNullable(lastSuccess));
  }

  /** Deletes batches until one comes back short; -1 when another janitor holds the lock. */
  private long drain(Supplier<OptionalInt> batch) {
    long total = 0;
    for (int i = 0; i < maxBatches; i++) {
      OptionalInt deleted = batch.get();
      if (deleted.isEmpty()) {
        return total == 0 ? -1 : total;
      }
      total += deleted.getAsInt();
      if (deleted.getAsInt() < batchSize) {
        break;
      }
    }
    return total;
  }

  /** Runs every interval in the background until {@link #close()}. */
  public synchronized Janitor start() {
    if (scheduler != null) {
      throw new IllegalStateException("janitor is already started");
    }
    scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "txbox-janitor");
      t.setDaemon(true);
      return t;
    });
    long millis = interval.toMillis();
    scheduler.scheduleWithFixedDelay(guard.guard(this::runLogged), millis, millis, TimeUnit.MILLISECONDS);
    return this;
  }

  /** One scheduled run; the guard logs a failure and the next interval tries again. */
  private void runLogged() {
    Cleanup done = runOnce();
    if (done.outboxEvents() + done.inboxRecords() > 0) {
      log.info("janitor removed {} relayed outbox events and {} inbox records", done.outboxEvents(),
          done.inboxRecords());
    }
  }

  /** Whether its last background run failed; the next interval tries again. For health checks. */
  public boolean isTroubled() {
    return guard.isTroubled();
  }

  /** Stops the background runs; a batch in progress finishes. */
  @Override
  public synchronized void close() {
    if (scheduler != null) {
      scheduler.shutdown();
      scheduler = null;
    }
  }

  /** Builds a {@link Janitor}; {@link #build()} checks every setting. */
  public static final class Builder {
    private final JanitorStore store;
    private Duration outboxRetention = DEFAULT_OUTBOX_RETENTION;
    private Duration inboxRetention = DEFAULT_INBOX_RETENTION;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private int maxBatches = DEFAULT_MAX_BATCHES;
    private Duration interval = DEFAULT_INTERVAL;

    private Builder(JanitorStore store) {
      this.store = Objects.requireNonNull(store, "store must not be null");
    }

    /** Age after which relayed outbox events are removed. Default 1 day. */
    public Builder outboxRetention(Duration outboxRetention) {
      this.outboxRetention = outboxRetention;
      return this;
    }

    /** The inbox's dedup window. Default 30 days. */
    public Builder inboxRetention(Duration inboxRetention) {
      this.inboxRetention = inboxRetention;
      return this;
    }

    /** Rows per delete transaction, 1 to 100,000. Default {@value Janitor#DEFAULT_BATCH_SIZE}. */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /** Most batches per table and run, 1 to 100,000. Default {@value Janitor#DEFAULT_MAX_BATCHES}. */
    public Builder maxBatches(int maxBatches) {
      this.maxBatches = maxBatches;
      return this;
    }

    /** Time between background runs, 1 s to 1 day. Default 1 minute. */
    public Builder interval(Duration interval) {
      this.interval = interval;
      return this;
    }

    /** Checks the settings and builds the janitor. */
    public Janitor build() {
      requireNotNegative("outboxRetention", outboxRetention);
      requireNotNegative("inboxRetention", inboxRetention);
      if (batchSize < 1 || batchSize > 100_000) {
        throw new IllegalArgumentException("batchSize must be >= 1 and <= 100000, was " + batchSize);
      }
      if (maxBatches < 1 || maxBatches > 100_000) {
        throw new IllegalArgumentException("maxBatches must be >= 1 and <= 100000, was " + maxBatches);
      }
      if (interval == null || interval.compareTo(Duration.ofSeconds(1)) < 0 || interval.compareTo(Duration.ofDays(1)) > 0) {
        throw new IllegalArgumentException("interval must be >= PT1S and <= P1D, was " + interval);
      }
      return new Janitor(this);
    }

    private static void requireNotNegative(String name, Duration value) {
      if (value == null || value.isNegative()) {
        throw new IllegalArgumentException(name + " must be >= 0, was " + value);
      }
    }
  }
}
