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
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * </table>
 *
 * <p>The gauges are read from the database at most once per {@code refresh} (default
 * {@value #DEFAULT_REFRESH_SECONDS} s), however often they are scraped, and the query reads at
 * most {@code limitPerBucket} (default {@value #DEFAULT_LIMIT_PER_BUCKET}) rows of each bucket.
 * When the database cannot be read, they show NaN, so a dashboard shows a gap rather than an old
 * figure.
 *
 * <pre>{@code
 * BacklogMeters.builder(store).subscriptions("default").build().bindTo(registry);
 * }</pre>
 */
public final class BacklogMeters implements MeterBinder {
  private static final Logger log = LoggerFactory.getLogger(BacklogMeters.class);

  /** Default time a reading is kept before the database is asked again. */
  public static final int DEFAULT_REFRESH_SECONDS = 10;
  /** Default most rows counted per bucket. */
  public static final int DEFAULT_LIMIT_PER_BUCKET = 1_000;

  private final OutboxStore store;
  private final List<String> subscriptions;
  private final Duration refresh;
  private final int limitPerBucket;
  private final Clock clock;

  private BacklogMeters(Builder b) {
    this.store = b.store;
    this.subscriptions = b.subscriptions;
    this.refresh = b.refresh;
    this.limitPerBucket = b.limitPerBucket;
    this.clock = b.clock;
  }

  /** A builder for the backlog gauges of {@code store}. */
  public static Builder builder(OutboxStore store) {
    return new Builder(Objects.requireNonNull(store, "store must not be null"));
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    for (String subscription : subscriptions) {
      Reading<Backlog> reading = new Reading<>("the backlog of subscription " + subscription,
          () -> store.backlog(subscription, limitPerBucket));
      Gauge.builder("txbox.outbox.pending", reading, r -> r.get().map(b -> (double) b.pending()).orElse(Double.NaN))
          .tag("subscription", subscription)
          .description("Committed outbox events the subscription has not relayed yet")
          .strongReference(true) // the reading lives only in the registry
          .register(registry);
      TimeGauge.builder("txbox.outbox.oldest.pending.age", reading, TimeUnit.MILLISECONDS,
              r -> r.get().map(b -> (double) b.oldestAge(clock.instant()).toMillis()).orElse(Double.NaN))
          .tag("subscription", subscription)
          .description("How long the oldest event the subscription has not relayed has waited")
          .strongReference(true)
          .register(registry);
    }
    Reading<OpenTransaction> open = new Reading<>("the oldest open transaction", store::oldestOpenTransaction);
    TimeGauge.builder("txbox.outbox.open.transaction.age", open, TimeUnit.MILLISECONDS,
            r -> r.get().map(t -> (double) t.age().toMillis()).orElse(r.failed() ? Double.NaN : 0.0))
        .description("How long the oldest transaction open in the outbox's database has been open, which holds"
            + " back every event committed after it began")
        .strongReference(true)
        .register(registry);
  }

  /** The latest value read from the database, read again once it is older than the refresh. */
  private final class Reading<T> {
    private final String what;
    private final Supplier<Optional<T>> read;
    private Instant readAt = Instant.MIN;
    private Optional<T> latest = Optional.empty();
    private boolean failed;

    Reading(String what, Supplier<Optional<T>> read) {
      this.what = what;
      this.read = read;
    }

    synchronized Optional<T> get() {
      Instant now = clock.instant();
      if (readAt.plus(refresh).isAfter(now)) {
        return latest;
      }
      readAt = now;
      try {
        latest = read.get();
        failed = false;
      } catch (RuntimeException e) {
        log.warn("Could not read {}: {}", what, e.getMessage());
        latest = Optional.empty();
        failed = true;
      }
      return latest;
    }

    /** Whether the latest reading failed: nothing known, unlike an empty answer. */
    synchronized boolean failed() {
      return failed;
    }
  }

  /** Builds {@link BacklogMeters}; {@link #build()} checks every setting. */
  public static final class Builder {
    private final OutboxStore store;
    private List<String> subscriptions = List.of("default");
    private Duration refresh = Duration.ofSeconds(DEFAULT_REFRESH_SECONDS);
    private int limitPerBucket = DEFAULT_LIMIT_PER_BUCKET;
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
      if (limitPerBucket < 1 || limitPerBucket > 10_000_000) {
        throw new IllegalArgumentException(
            "limitPerBucket must be between 1 and 10,000,000, was " + limitPerBucket);
      }
      return new BacklogMeters(this);
    }
  }
}
