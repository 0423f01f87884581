package io.txbox.micrometer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.txbox.cdc.LogicalRelay;
import io.txbox.cdc.LogicalReplication;
import io.txbox.cdc.SlotStatus;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * Gauges of a logical-decoding slot ({@code txbox-postgres-cdc}), tagged with the {@code slot}:
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>Name</th><th>Type</th><th>What it shows</th></tr>
 *   <tr><td>{@code txbox.slot.lag}</td><td>gauge, bytes</td><td>WAL written since the slot's confirmed position; NaN while the slot is being created</td></tr>
 *   <tr><td>{@code txbox.slot.retained}</td><td>gauge, bytes</td><td>WAL the server keeps for the slot: the disk it costs</td></tr>
 *   <tr><td>{@code txbox.slot.active}</td><td>gauge</td><td>1 while a relay streams the slot</td></tr>
 *   <tr><td>{@code txbox.slot.invalidated}</td><td>gauge</td><td>1 once the server removed WAL the slot needed: alert at once</td></tr>
 *   <tr><td>{@code txbox.slot.gap}</td><td>gauge</td><td>1 while a failover's range of lost WAL messages is not acknowledged: alert at once</td></tr>
 *   <tr><td>{@code txbox.slot.lag.age}</td><td>time gauge</td><td>with {@link Builder#relay}: how long ago the oldest event this relay read and has not confirmed committed</td></tr>
 *   <tr><td>{@code txbox.outbox.oldest.pending.age}</td><td>time gauge, tag {@code subscription} (the slot)</td><td>with {@link Builder#relay}: the same age under the polling relay's name, so that one alert serves both</td></tr>
 *   <tr><td>{@code txbox.slot.relay.waiting}</td><td>time gauge</td><td>with {@link Builder#relay}: how long this relay has waited for the call to the server it has waited for longest (creating the slot again, starting the stream, a checkpoint's commit); 0 when none is in progress</td></tr>
 *   <tr><td>{@code txbox.outbox.pending}</td><td>gauge, tag {@code subscription} (the slot)</td><td>with {@link Builder#relay}: events this relay read and has not confirmed; 0 on a standby</td></tr>
 * </table>
 *
 * <p>What the two {@code txbox.outbox} gauges mean in logical mode: the backlog this relay holds,
 * not the WAL it has not read yet, which {@code txbox.slot.lag} measures in bytes. A slot that
 * nobody streams shows as {@code txbox.slot.active} 0.
 *
 * <p>The slot is read from the database at most once per {@code refresh} (default
 * {@value #DEFAULT_REFRESH_SECONDS} s), on a thread of its own: a scrape waits for a reading at
 * most {@value BacklogMeters#DEFAULT_READ_WAIT_MILLIS} ms, then answers from the last one. When
 * it cannot be read, or does not exist, the gauges show NaN.
 *
 * <pre>{@code
 * SlotMeters.builder(replication).relay(relay).build().bindTo(registry);
 * }</pre>
 */
public final class SlotMeters implements MeterBinder {

  /** Default time a reading is kept before the database is asked again. */
  public static final int DEFAULT_REFRESH_SECONDS = 10;

  private final LogicalReplication replication;
  private final Supplier<LogicalRelay> relay;
  private final Clock clock;
  /** The slot and whether a gap waits to be acknowledged, read together off the scraping thread. */
  private final LatestReading<SlotReading> reading;

  private record SlotReading(Optional<SlotStatus> status, boolean gap) {}

  private SlotMeters(Builder b) {
    this.replication = b.replication;
    this.relay = b.relay;
    this.clock = b.clock;
    this.reading = new LatestReading<>("the state of slot " + b.replication.slot(),
        () -> Optional.of(new SlotReading(b.replication.status(), b.replication.gap().isPresent())), b.refresh,
        Duration.ofMillis(BacklogMeters.DEFAULT_READ_WAIT_MILLIS), b.clock,
        LatestReading.readerThread("txbox-slot-reader"));
  }

  /** A builder for the gauges of {@code replication}'s slot. */
  public static Builder builder(LogicalReplication replication) {
    return new Builder(Objects.requireNonNull(replication, "replication must not be null"));
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    String slot = replication.slot();
    gauge(registry, "txbox.slot.lag", "bytes", "WAL written since the slot's confirmed position",
        s -> s.beingCreated() ? Double.NaN : s.lagBytes());
    gauge(registry, "txbox.slot.retained", "bytes", "WAL the server keeps for the slot", SlotStatus::retainedBytes);
    gauge(registry, "txbox.slot.active", null, "1 while a relay streams the slot", s -> s.active() ? 1 : 0);
    gauge(registry, "txbox.slot.invalidated", null, "1 once the server removed WAL the slot still needed",
        s -> s.invalidated() ? 1 : 0);
    Gauge.builder("txbox.slot.gap", this, SlotMeters::gap)
        .tag("slot", slot)
        .description("1 while a failover's range of events written as WAL messages, lost with the slot, is not"
            + " acknowledged (txbox logical acknowledge-gap)")
        .strongReference(true)
        .register(registry);
    if (relay != null) {
      TimeGauge.builder("txbox.slot.lag.age", relay, TimeUnit.MILLISECONDS, SlotMeters::lagMillis)
          .tag("slot", slot)
          .description("How long ago the oldest event this relay read and has not confirmed committed")
          .strongReference(true) // a supplier nothing else holds
          .register(registry);
      TimeGauge.builder("txbox.outbox.oldest.pending.age", relay, TimeUnit.MILLISECONDS, SlotMeters::lagMillis)
          .tag("subscription", slot)
          .description("How long the oldest event this relay read and has not confirmed has waited since its commit")
          .strongReference(true)
          .register(registry);
      TimeGauge.builder("txbox.slot.relay.waiting", relay, TimeUnit.MILLISECONDS, m -> waitingMillis(m, clock))
          .tag("slot", slot)
          .description("How long this relay has waited for the call to the server it has waited for longest; 0 when"
              + " none is in progress")
          .strongReference(true)
          .register(registry);
      Gauge.builder("txbox.outbox.pending", relay, SlotMeters::pending)
          .tag("subscription", slot)
          .description("Events this relay read from the slot and has not confirmed")
          .strongReference(true)
          .register(registry);
    }
  }

  private static double pending(Supplier<LogicalRelay> relay) {
    LogicalRelay current = relay.get();
    return current == null ? Double.NaN : current.pending();
  }

  private static double waitingMillis(Supplier<LogicalRelay> relay, Clock clock) {
    LogicalRelay current = relay.get();
    return current == null ? Double.NaN
        : current.waitingFor().map(w -> (double) w.age(clock.instant()).toMillis()).orElse(0.0);
  }

  private static double lagMillis(Supplier<LogicalRelay> relay) {
    LogicalRelay current = relay.get();
    return current == null ? Double.NaN : current.lag().toMillis();
  }

  private void gauge(MeterRegistry registry, String name, String unit, String description,
      ToDoubleFunction<SlotStatus> value) {
    Gauge.builder(name, this, m -> m.status().map(value::applyAsDouble).orElse(Double.NaN))
        .tag("slot", replication.slot())
        .baseUnit(unit)
        .description(description)
        .strongReference(true) // these meters live only in the registry
        .register(registry);
  }

  private Optional<SlotStatus> status() {
    return reading.get().flatMap(SlotReading::status);
  }

  private double gap() {
    return reading.get().map(r -> r.gap() ? 1.0 : 0.0).orElse(Double.NaN);
  }

  /** Builds {@link SlotMeters}; {@link #build()} checks every setting. */
  public static final class Builder {
    private final LogicalReplication replication;
    private Supplier<LogicalRelay> relay;
    private Duration refresh = Duration.ofSeconds(DEFAULT_REFRESH_SECONDS);
    private Clock clock = Clock.systemUTC();

    private Builder(LogicalReplication replication) {
      this.replication = replication;
    }

    /** The relay of this process, for the lag's age. Default none. */
    public Builder relay(LogicalRelay relay) {
      Objects.requireNonNull(relay, "relay must not be null");
      this.relay = () -> relay;
      return this;
    }

    /**
     * The relay of this process as it is now, for one that is rebuilt when it restarts (as in a
     * Spring context); {@code null} while there is none, when the age shows NaN. Default none.
     */
    public Builder relay(Supplier<LogicalRelay> current) {
      this.relay = Objects.requireNonNull(current, "relay must not be null");
      return this;
    }

    /** How long a reading of the slot is kept. Default {@value #DEFAULT_REFRESH_SECONDS} s, 100 ms to 1 h. */
    public Builder refresh(Duration refresh) {
      this.refresh = refresh;
      return this;
    }

    /** The clock for the refresh. Default the system's. */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock must not be null");
      return this;
    }

    /** Checks the settings and builds. */
    public SlotMeters build() {
      if (refresh == null || refresh.compareTo(Duration.ofMillis(100)) < 0 || refresh.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("refresh must be >= 100 ms and <= 1 h, was " + refresh);
      }
      return new SlotMeters(this);
    }
  }
}
