package io.txbox.server;

import io.txbox.Janitor;
import io.txbox.jdbc.spi.Database;
import io.txbox.spi.JanitorStore;
import java.time.Duration;
import java.util.Optional;
import picocli.CommandLine.Option;

/**
 * The janitor {@code txbox relay} runs beside the relay unless told not to: it deletes relayed
 * events past the outbox retention and inbox records past the dedup window, and keeps a
 * partitioned outbox's partitions ahead of the writers. Several relays take turns (an advisory
 * lock), so running one in every relay is safe.
 *
 * <pre>{@code
 * @Mixin JanitorOptions janitorOptions;
 * Optional<Janitor> started = janitorOptions.janitor(store).map(Janitor::start);
 * }</pre>
 */
final class JanitorOptions {
  @Option(names = "--janitor", negatable = true, defaultValue = "true", fallbackValue = "true",
      description = "Run the janitor in this relay (relays take turns): deletes relayed events past"
          + " --outbox-retention and inbox records past --inbox-retention, and keeps a partitioned outbox's"
          + " partitions ahead of the writers. --no-janitor (TXBOX_JANITOR=false) where the janitor runs"
          + " elsewhere, such as an application with the Spring Boot starter. Default: on.")
  boolean enabled;

  @Option(names = "--outbox-retention", defaultValue = "1d", converter = DurationConverter.class,
      description = "How long relayed events are kept. Default: ${DEFAULT-VALUE}.")
  Duration outboxRetention;

  @Option(names = "--inbox-retention", defaultValue = "30d", converter = DurationConverter.class,
      description = "How long inbox records are kept: longer than any redelivery can come late. Default: ${DEFAULT-VALUE}.")
  Duration inboxRetention;

  @Option(names = "--janitor-interval", defaultValue = "1m", converter = DurationConverter.class,
      description = "Time between janitor runs. Default: ${DEFAULT-VALUE}.")
  Duration interval;

  @Option(names = "--partitions-ahead", defaultValue = "" + Database.OutboxSettings.DEFAULT_PARTITIONS_AHEAD,
      description = "A partitioned outbox: empty partitions the janitor keeps ahead of the writers, 1 to 100."
          + " Default: ${DEFAULT-VALUE}.")
  int partitionsAhead;

  /** Options picocli fills in. */
  JanitorOptions() {}

  /** Empty partitions the janitor keeps ahead of the writers of a partitioned outbox. */
  int partitionsAhead() {
    return partitionsAhead;
  }

  /** The janitor, checked but not started; empty with {@code --no-janitor}. */
  Optional<Janitor> janitor(JanitorStore store) {
    if (!enabled) {
      return Optional.empty();
    }
    try {
      return Optional.of(Janitor.builder(store)
          .outboxRetention(outboxRetention)
          .inboxRetention(inboxRetention)
          .interval(interval)
          .build());
    } catch (IllegalArgumentException e) {
      if (String.valueOf(e.getMessage()).startsWith("interval ")) { // the janitor's interval, not the relay's
        throw new IllegalArgumentException("invalid --janitor-interval (TXBOX_JANITOR_INTERVAL): " + e.getMessage(), e);
      }
      throw e;
    }
  }
}
