package io.txbox.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.spi.Metrics;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The relay's {@link Metrics} as Micrometer meters, each tagged with the {@code subscription}:
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>Name</th><th>Type</th><th>What it counts</th></tr>
 *   <tr><td>{@code txbox.relay.published}</td><td>counter</td>
 *       <td>events the broker acknowledged and whose checkpoint is saved</td></tr>
 *   <tr><td>{@code txbox.relay.failures}</td><td>counter</td>
 *       <td>failed publish attempts that will be retried; registered at zero with the
 *           subscription, so that a rate or {@code increase()} sees the very first failure</td></tr>
 *   <tr><td>{@code txbox.relay.failures.by.error}</td><td>counter</td>
 *       <td>the same attempts by the exception's simple class name (tag {@code error}); a series
 *           appears with its first failure, since no one knows a broker's errors in advance</td></tr>
 *   <tr><td>{@code txbox.relay.dead.letters}</td><td>counter</td>
 *       <td>events the relay gave up on and copied to the dead-letter table</td></tr>
 *   <tr><td>{@code txbox.relay.lag}</td><td>timer</td>
 *       <td>from an event's commit-time timestamp (or its delay's end) to its acknowledgement,
 *           with the 0.5, 0.95 and 0.99 percentiles</td></tr>
 *   <tr><td>{@code txbox.relay.buckets.owned}</td><td>gauge</td>
 *       <td>buckets this relay instance holds the lease of; each instance reports its own (the
 *           polling relay only: the logical relay holds no buckets)</td></tr>
 *   <tr><td>{@code txbox.relay.transactions}</td><td>counter</td>
 *       <td>exactly-once delivery only: rounds' broker transactions by {@code outcome}
 *           ({@code committed}, {@code aborted}, {@code fenced}: another relay took the buckets
 *           over, {@code unknown}: a commit that failed and may have happened)</td></tr>
 * </table>
 *
 * <p>The publish rate, failure rate and dead-letter rate are the rates of the three counters
 * tagged by subscription alone.
 *
 * <pre>{@code
 * Relay relay = Relay.builder(store, publisher)
 *     .metrics(RelayMeters.create(registry))
 *     .build();
 * }</pre>
 *
 * <p>Thread-safe, and quick: meters are looked up once per subscription.
 */
public final class RelayMeters implements Metrics {
  private final MeterRegistry registry;
  private final Map<String, Meters> bySubscription = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> bucketsOwned = new ConcurrentHashMap<>();

  private RelayMeters(MeterRegistry registry) {
    this.registry = registry;
  }

  /** Meters in {@code registry}, which the application exports tagged with its instance. */
  public static RelayMeters create(MeterRegistry registry) {
    return new RelayMeters(Objects.requireNonNull(registry, "registry must not be null"));
  }

  /**
   * Registers the counters and the lag timer of {@code subscription} now, at zero, rather than on
   * its first event: Prometheus's {@code increase()} sees nothing in a counter whose first sample is
   * already 1, so a relay's very first dead letter would never fire an alert.
   */
  public RelayMeters register(String subscription) {
    meters(Objects.requireNonNull(subscription, "subscription must not be null"));
    return this;
  }

  @Override
  public void published(String subscription, List<Message> acknowledged) {
    Meters m = meters(subscription);
    m.published.increment(acknowledged.size());
    Instant now = Instant.now();
    for (Message message : acknowledged) {
      Instant due = dueAt(message);
      if (due != null && due.isBefore(now)) {
        m.lag.record(Duration.between(due, now));
      }
    }
  }

  @Override
  public void retrying(String subscription, Message message, int attempts, Throwable error) {
    meters(subscription).failures.increment();
    registry.counter("txbox.relay.failures.by.error",
        "subscription", subscription, "error", error.getClass().getSimpleName()).increment();
  }

  @Override
  public void deadLettered(DeadLetter letter) {
    meters(letter.subscription()).deadLetters.increment();
  }

  /**
   * {@inheritDoc}
   *
   * <p>The gauge is registered on the first report, so a relay that owns no buckets (the logical
   * relay streams a slot instead) exports none, rather than one stuck at 0.
   */
  @Override
  public void bucketsOwned(String subscription, int buckets) {
    bucketsOwned.computeIfAbsent(subscription, s -> {
      AtomicInteger owned = new AtomicInteger();
      Gauge.builder("txbox.relay.buckets.owned", owned, AtomicInteger::get).tag("subscription", s)
          .description("Buckets this relay instance holds the lease of").register(registry);
      return owned;
    }).set(buckets);
  }

  @Override
  public void transaction(String subscription, TransactionOutcome outcome) {
    Counter.builder("txbox.relay.transactions").tag("subscription", subscription)
        .tag("outcome", outcome.name().toLowerCase(Locale.ROOT))
        .description("Exactly-once delivery: rounds' broker transactions by outcome (committed, aborted, fenced,"
            + " unknown)")
        .register(registry).increment();
  }

  private static Instant dueAt(Message message) {
    Instant available = message.availableAt();
    Instant created = message.createdAt();
    if (available != null && (created == null || available.isAfter(created))) {
      return available;
    }
    return created;
  }

  private Meters meters(String subscription) {
    return bySubscription.computeIfAbsent(subscription, this::newMeters);
  }

  private Meters newMeters(String subscription) {
    return new Meters(
        Counter.builder("txbox.relay.published").tag("subscription", subscription)
            .description("Events the broker acknowledged and whose checkpoint is saved")
            .register(registry),
        Counter.builder("txbox.relay.failures").tag("subscription", subscription)
            .description("Failed publish attempts that will be retried")
            .register(registry),
        Counter.builder("txbox.relay.dead.letters").tag("subscription", subscription)
            .description("Events the relay gave up on and dead-lettered")
            .register(registry),
        Timer.builder("txbox.relay.lag").tag("subscription", subscription)
            .description("Time from an event's timestamp to the broker's acknowledgement")
            .publishPercentiles(0.5, 0.95, 0.99)
            .register(registry));
  }

  private record Meters(Counter published, Counter failures, Counter deadLetters, Timer lag) {}
}
