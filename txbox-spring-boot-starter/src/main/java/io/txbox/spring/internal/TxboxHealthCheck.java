package io.txbox.spring.internal;

import io.txbox.Relay;
import io.txbox.spi.Backlog;
import io.txbox.spi.OutboxStore;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * What the {@code txbox} health indicator reports, in no Spring Boot type, so that the Boot 3 and
 * Boot 4 indicators ({@link Boot3HealthIndicator}, {@link Boot4HealthIndicator}) say the same.
 *
 * <p>DOWN when this application's relay has stopped, or when the oldest event nobody relayed is
 * older than the threshold: the silent backlog that nobody notices, whatever its cause (every
 * relay down, a broker refusing, a long transaction holding delivery back). The {@code troubled}
 * detail lists the background loops whose last step failed.
 */
public final class TxboxHealthCheck {
  /** The verdict and the details shown beside it, in the order they were added. */
  public record Result(boolean up, Map<String, Object> details) {}

  private final OutboxStore store;
  private final String subscription;
  private final Optional<ContextBound<Relay>> relay;
  private final Duration maxPendingAge;
  private final int limitPerBucket;
  private final Clock clock;
  private final Supplier<List<String>> troubledLoops;

  public TxboxHealthCheck(
      OutboxStore store, String subscription, Optional<ContextBound<Relay>> relay, Duration maxPendingAge,
      int limitPerBucket, Clock clock, Supplier<List<String>> troubledLoops) {
    this.store = store;
    this.subscription = subscription;
    this.relay = relay;
    this.maxPendingAge = maxPendingAge;
    this.limitPerBucket = limitPerBucket;
    this.clock = clock;
    this.troubledLoops = troubledLoops;
  }

  public Result check() {
    Map<String, Object> details = new LinkedHashMap<>();
    boolean up = true;
    details.put("subscription", subscription);
    if (relay.isPresent()) {
      Optional<Relay> running = relay.get().current().filter(Relay::isRunning);
      details.put("relay", running.isPresent() ? "running" : "stopped");
      running.ifPresent(r -> {
        details.put("instance", r.instanceId());
        details.put("ownedBuckets", r.ownedBuckets().size());
      });
      up = running.isPresent();
    }
    // A failing loop goes on trying; it shows here, and DOWN comes from its effect: a stopped
    // relay or an old backlog.
    details.put("troubled", troubledLoops.get());
    Optional<Backlog> backlog = store.backlog(subscription, limitPerBucket);
    if (backlog.isPresent()) {
      Backlog b = backlog.get();
      Duration age = b.oldestAge(clock.instant());
      details.put("pending", b.capped() ? b.pending() + "+" : b.pending());
      details.put("oldestPendingAge", age.toString());
      details.put("maxPendingAge", maxPendingAge.toString());
      up &= age.compareTo(maxPendingAge) <= 0;
    }
    return new Result(up, details);
  }
}
