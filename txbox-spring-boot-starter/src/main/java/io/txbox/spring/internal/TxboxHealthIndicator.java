package io.txbox.spring.internal;

import io.txbox.Relay;
import io.txbox.spi.Backlog;
import io.txbox.spi.OutboxStore;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * DOWN when this application's relay has stopped, or when the oldest event nobody relayed is
 * older than the threshold: the silent backlog that nobody notices, whatever its cause (every
 * relay down, a broker refusing, a long transaction holding delivery back). The {@code troubled}
 * detail lists the background loops whose last step failed.
 */
public final class TxboxHealthIndicator extends AbstractHealthIndicator {
  private final OutboxStore store;
  private final String subscription;
  private final Optional<ContextBound<Relay>> relay;
  private final Duration maxPendingAge;
  private final int limitPerBucket;
  private final Clock clock;
  private final Supplier<List<String>> troubledLoops;

  public TxboxHealthIndicator(
      OutboxStore store, String subscription, Optional<ContextBound<Relay>> relay, Duration maxPendingAge,
      int limitPerBucket, Clock clock, Supplier<List<String>> troubledLoops) {
    super("txbox health check failed");
    this.store = store;
    this.subscription = subscription;
    this.relay = relay;
    this.maxPendingAge = maxPendingAge;
    this.limitPerBucket = limitPerBucket;
    this.clock = clock;
    this.troubledLoops = troubledLoops;
  }

  @Override
  protected void doHealthCheck(Health.Builder health) {
    health.up().withDetail("subscription", subscription);
    relay.ifPresent(bound -> {
      Optional<Relay> running = bound.current().filter(Relay::isRunning);
      health.withDetail("relay", running.isPresent() ? "running" : "stopped");
      running.ifPresent(r -> health.withDetail("instance", r.instanceId())
          .withDetail("ownedBuckets", r.ownedBuckets().size()));
      if (running.isEmpty()) {
        health.down();
      }
    });
    // A failing loop goes on trying; it shows here, and DOWN comes from its effect: a stopped
    // relay or an old backlog.
    health.withDetail("troubled", troubledLoops.get());
    Optional<Backlog> backlog = store.backlog(subscription, limitPerBucket);
    backlog.ifPresent(b -> {
      Duration age = b.oldestAge(clock.instant());
      health.withDetail("pending", b.capped() ? b.pending() + "+" : b.pending())
          .withDetail("oldestPendingAge", age.toString())
          .withDetail("maxPendingAge", maxPendingAge.toString());
      if (age.compareTo(maxPendingAge) > 0) {
        health.down();
      }
    });
  }
}
