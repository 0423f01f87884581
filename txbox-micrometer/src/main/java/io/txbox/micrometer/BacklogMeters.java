package io.txbox.micrometer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.txbox.spi.Backlog;
import io.txbox.spi.OpenTransaction;
import io.txbox.spi.OutboxStore;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Gauges of what each subscription has not relayed yet, tagged with the {@code subscription}:
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>Name</th><th>Type</th><th>What it shows</th></tr>
 *   <tr><td>{@code txbox.outbox.pending}</td><td>gauge</td>
 *       <td>committed events not yet relayed, counted up to {@code limitPerBucket} per bucket: a
 *           floor, once a bucket holds more</td></tr>
 *   <tr><td>{@code txbox.outbox.oldest.pending.age}</td><td>time gauge</td>
 *       <td>how long the oldest of them has waited: the figure to alert on</td></tr>
 *   <tr><td>{@code txbox.outbox.open.transaction.age}</td><td>time gauge, no tag</td>
 *       <td>how long the oldest transaction open in the outbox's database has been open, 0 when
 *           none: the relay reads no event committed after it began, so delivery stands still
 *           while it stays open ({@code txbox status} names its process)</td></tr>
 *   <tr><td>{@code txbox.outbox.reading.age}</td><td>time gauge, no tag</td>
 *       <td>how old the figures above are (one reading gives them all): it grows while the
 *           database does not answer</td></tr>
 *   <tr><td>{@code txbox.outbox.database.unreachable}</td><td>gauge, no tag</td>
 *       <td>1 while the last reading failed or a reading has not finished within {@code readWait},
 *           else 0</td></tr>
 * </table>
 *
 * <p>The gauges are read from the database at most once per {@code refresh} (default
 * {@value #DEFAULT_REFRESH_SECONDS} s), however often they are scraped, and the query reads at
 * most {@code limitPerBucket} (default {@value #DEFAULT_LIMIT_PER_BUCKET}) rows of each bucket.
 * One reading gives every figure and runs on a thread of its own: a scrape waits for it at most
 * {@code readWait} in all (default {@value #DEFAULT_READ_WAIT_MILLIS} ms), then answers from the
 * last figures read, so that a database that hangs never makes the whole scrape time out (and the
 * process look down); {@code
 * txbox.outbox.reading.age} then says how old they are. When the database refuses a reading, the
 * figures show NaN, so a dashboard shows a gap rather than an old figure.
 *
 * <pre>{@code
 * BacklogMeters.builder(store).subscriptions("default").build().bindTo(registry);
 * }</pre>
 */
public final class BacklogMeters implements MeterBinder {
  /** Default time a reading is kept before the database is asked again. */
  public static final int DEFAULT_REFRESH_SECONDS = 10;
  /** Default most rows counted per bucket. */
  public static final int DEFAULT_LIMIT_PER_BUCKET = 1_000;
  /** Default longest a scrape waits for a reading under way. */
  public static final int DEFAULT_READ_WAIT_MILLIS = 500;

  private final OutboxStore store;
  private final List<String> subscriptions;
  private final Duration refresh;
  private final int limitPerBucket;
  private final Duration readWait;
  private final Clock clock;
  private final ExecutorService reader = LatestReading.readerThread("txbox-backlog-reader");

  private BacklogMeters(Builder b) {
    this.store = b.store;
    this.subscriptions = b.subscriptions;
    this.refresh = b.refresh;
    this.limitPerBucket = b.limitPerBucket;
    this.readWait = b.readWait;
    this.clock = b.clock;
  }

  /** A builder for the backlog gauges of {@code store}. */
  public static Builder builder(OutboxStore store) {
    return new Builder(Objects.requireNonNull(store, "store must not be null"));
  }

  /** What one reading of the database gives: each subscription's backlog, and the oldest open transaction. */
  private record Figures(Map<String, Backlog> backlogs, Optional<OpenTransaction> open) {}

  @Override
  public void bindTo(MeterRegistry registry) {
    // One reading for every gauge: a scrape waits for a hanging database once, not once a gauge.
    LatestReading<Figures> figures = new LatestReading<>("the backlog of subscriptions " + subscriptions,
        () -> Optional.of(read()), refresh, readWait, clock, reader);
    for (String subscription : subscriptions) {
      Gauge.builder("txbox.outbox.pending", figures,
              f -> backlog(f, subscription).map(b -> (double) b.pending()).orElse(Double.NaN))
          .tag("subscription", subscription)
          .description("Committed outbox events the subscription has not relayed yet")
          .strongReference(true) // the reading lives only in the registry
          .register(registry);
      TimeGauge.builder("txbox.outbox.oldest.pending.age", figures, TimeUnit.MILLISECONDS,
              f -> backlog(f, subscription).map(b -> (double) b.oldestAge(clock.instant()).toMillis()).orElse(Double.NaN))
          .tag("subscription", subscription)
          .description("How long the oldest event the subscription has not relayed has waited")
          .strongReference(true)
          .register(registry);
    }
    TimeGauge.builder("txbox.outbox.open.transaction.age", figures, TimeUnit.MILLISECONDS,
            f -> f.get().map(r -> r.open().map(t -> (double) t.age().toMillis()).orElse(0.0)).orElse(Double.NaN))
        .description("How long the oldest transaction open in the outbox's database has been open, which holds"
            + " back every event committed after it began")
        .strongReference(true)
        .register(registry);
    TimeGauge.builder("txbox.outbox.reading.age", figures, TimeUnit.MILLISECONDS, f -> f.ageMillis(clock.instant()))
        .description("How old the backlog figures shown are: it grows while the database does not answer")
        .strongReference(true)
        .register(registry);
    Gauge.builder("txbox.outbox.database.unreachable", figures, f -> f.unreachable(clock.instant()) ? 1 : 0)
        .description("1 while the outbox's database refused the last reading or did not answer it in time")
        .strongReference(true)
        .register(registry);
  }

  private Figures read() {
    Map<String, Backlog> backlogs = new HashMap<>();
    for (String subscription : subscriptions) {
      store.backlog(subscription, limitPerBucket).ifPresent(b -> backlogs.put(subscription, b));
    }
    return new Figures(backlogs, store.oldestOpenTransaction());
  }

  private static Optional<Backlog> backlog(LatestReading<Figures> figures, String subscription) {
    return figures.get().map(f -> f.backlogs().get(subscription));
  }

  /** Builds {@link BacklogMeters}; {@link #build()} checks every setting. */
  public static final class Builder {
    private final OutboxStore store;
    private List<String> subscriptions = List.of("default");
    private Duration refresh = Duration.ofSeconds(DEFAULT_REFRESH_SECONDS);
    private int limitPerBucket = DEFAULT_LIMIT_PER_BUCKET;
    private Duration readWait = Duration.ofMillis(DEFAULT_READ_WAIT_MILLIS);
    private Clock clock = Clock.systemUTC();

    private Builder(OutboxStore store) {
      this.store = store;
    }

    /** The subscriptions to show. Default {@code default}, the relay's default subscription. */
    public Builder subscriptions(String... subscriptions) {
      this.subscriptions = List.of(subscriptions);
      return this;
    }

    /** How long a reading is shown before the database is asked again. Default 10 s. */
    public Builder refresh(Duration refresh) {
      this.refresh = Objects.requireNonNull(refresh, "refresh must not be null");
      return this;
    }

    /** Most rows counted per bucket, the bound on the query's cost. Default 1,000. */
    public Builder limitPerBucket(int limitPerBucket) {
      this.limitPerBucket = limitPerBucket;
      return this;
    }

    /**
     * Longest a scrape waits for a reading under way before it answers from the last figures:
     * 0 to 10 s, default {@value BacklogMeters#DEFAULT_READ_WAIT_MILLIS} ms.
     */
    public Builder readWait(Duration readWait) {
      this.readWait = Objects.requireNonNull(readWait, "readWait must not be null");
      return this;
    }

    /** The clock ages are measured with. Default the system clock. */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock must not be null");
      return this;
    }

    /** The gauges; bind them with {@link BacklogMeters#bindTo}. */
    public BacklogMeters build() {
      if (subscriptions.isEmpty()) {
        throw new IllegalArgumentException("subscriptions must name at least one subscription");
      }
      if (refresh.isNegative()) {
        throw new IllegalArgumentException("refresh must not be negative, was " + refresh);
      }
      if (readWait.isNegative() || readWait.compareTo(Duration.ofSeconds(10)) > 0) {
        throw new IllegalArgumentException("readWait must be between 0 and 10s, was " + readWait);
      }
      if (limitPerBucket < 1 || limitPerBucket > 10_000_000) {
        throw new IllegalArgumentException(
            "limitPerBucket must be between 1 and 10,000,000, was " + limitPerBucket);
      }
      return new BacklogMeters(this);
    }
  }
}
