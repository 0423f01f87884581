package io.txbox.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.txbox.Janitor;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * What the janitor does, so that a janitor that stopped deleting shows before the tables grow:
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>Name</th><th>Type</th><th>What it shows</th></tr>
 *   <tr><td>{@code txbox.janitor.deleted}</td><td>counter, tag {@code table} ({@code outbox} or {@code inbox})</td>
 *       <td>relayed outbox events and inbox records removed</td></tr>
 *   <tr><td>{@code txbox.janitor.failures}</td><td>counter</td><td>runs that failed; the next interval tries again</td></tr>
 *   <tr><td>{@code txbox.janitor.last.success}</td><td>gauge, seconds since the epoch</td>
 *       <td>when the last run that did not fail ended, NaN before the first: {@code time() -
 *           txbox_janitor_last_success_seconds} is its age</td></tr>
 * </table>
 *
 * <p>Each counter starts at 0 when bound, so that a rate sees the first failure.
 *
 * <pre>{@code
 * new JanitorMeters(janitor).bindTo(registry);
 * }</pre>
 */
public final class JanitorMeters implements MeterBinder {
  private static final Janitor.Totals NONE = new Janitor.Totals(0, 0, 0, Optional.empty());

  private final Supplier<Optional<Janitor>> janitor;

  /** Meters of {@code janitor}. */
  public JanitorMeters(Janitor janitor) {
    Objects.requireNonNull(janitor, "janitor must not be null");
    this.janitor = () -> Optional.of(janitor);
  }

  /** Meters of the janitor {@code janitor} gives when read, which may start later (as in Spring); 0 until then. */
  public JanitorMeters(Supplier<Optional<Janitor>> janitor) {
    this.janitor = Objects.requireNonNull(janitor, "janitor must not be null");
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    // Micrometer holds a meter's object only weakly, and an application (txbox relay is one) may
    // bind these meters and keep no reference to them: each counter's function reads through
    // this binder, which it captures, so that the counters do not freeze at the next collection.
    FunctionCounter.builder("txbox.janitor.deleted", this, ignored -> totals().outboxEvents())
        .tag("table", "outbox").description("Relayed outbox events the janitor removed").register(registry);
    FunctionCounter.builder("txbox.janitor.deleted", this, ignored -> totals().inboxRecords())
        .tag("table", "inbox").description("Inbox records the janitor removed").register(registry);
    FunctionCounter.builder("txbox.janitor.failures", this, ignored -> totals().failures())
        .description("Janitor runs that failed").register(registry);
    Gauge.builder("txbox.janitor.last.success", this,
            m -> m.totals().lastSuccess().map(t -> t.toEpochMilli() / 1000.0).orElse(Double.NaN))
        .baseUnit("seconds").description("When the janitor's last run that did not fail ended, in seconds since the epoch")
        .strongReference(true)
        .register(registry);
  }

  private Janitor.Totals totals() {
    return janitor.get().map(Janitor::totals).orElse(NONE);
  }
}
