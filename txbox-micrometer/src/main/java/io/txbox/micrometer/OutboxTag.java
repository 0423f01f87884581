package io.txbox.micrometer;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.config.MeterFilter;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Tags the meters that describe one outbox ({@code txbox.outbox.*}, {@code txbox.relay.*},
 * {@code txbox.slot.*}, {@code txbox.janitor.*}, and {@code txbox.loops.*}, which tells an alert
 * which outbox a process that stopped answering served) with {@code outbox}: the database, schema and table the events are in,
 * such as {@code shop.public.txbox_outbox}. Every process that reports on the same outbox (the
 * application that writes it, the relays that read it) gives the same value, so alert rules
 * aggregate by {@code (outbox, subscription)} and two services whose subscriptions are both
 * called {@code default} no longer hide each other's outage.
 *
 * <pre>{@code
 * registry.config().meterFilter(OutboxTag.filter(store.outboxName()));
 * }</pre>
 */
public final class OutboxTag {
  /** The tag's name. */
  public static final String NAME = "outbox";
  private static final List<String> PREFIXES = List.of("txbox.outbox.", "txbox.relay.", "txbox.slot.", "txbox.janitor.",
      "txbox.loops.");

  private OutboxTag() {}

  /** A filter that adds {@code outbox=<name>} to the outbox's meters and leaves every other meter alone. */
  public static MeterFilter filter(String outbox) {
    Objects.requireNonNull(outbox, "outbox must not be null");
    return filter(() -> outbox);
  }

  /**
   * The same, with the name asked of {@code outbox} when the first of the outbox's meters is
   * registered, and kept: for an application whose database may not answer while it starts.
   */
  public static MeterFilter filter(Supplier<String> outbox) {
    Objects.requireNonNull(outbox, "outbox must not be null");
    return new MeterFilter() {
      private volatile Tag tag;

      @Override
      public Meter.Id map(Meter.Id id) {
        boolean ours = PREFIXES.stream().anyMatch(p -> id.getName().startsWith(p));
        return ours && id.getTag(NAME) == null ? id.withTag(tag()) : id;
      }

      private Tag tag() {
        Tag t = tag;
        if (t == null) {
          t = Tag.of(NAME, outbox.get());
          tag = t;
        }
        return t;
      }
    };
  }
}
