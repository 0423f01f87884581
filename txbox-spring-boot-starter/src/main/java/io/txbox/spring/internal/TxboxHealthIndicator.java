package io.txbox.spring.internal;

import io.txbox.Relay;
import io.txbox.spi.Backlog;
import io.txbox.spi.OutboxStore;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * DOWN when this application's relay has stopped, or when the oldest event nobody relayed is
 * older than the threshold: the silent backlog that nobody notices, whatever its cause (every
 * relay down, a broker refusing, a long transaction holding delivery back).
 */
public final class TxboxHealthIndicator extends AbstractHealthIndicator {
  private final OutboxStore store;
  private final String subscription;
  private final Optional<ContextBound<Relay>> relay;
  private final Duration maxPendingAge;
  private final int limitPerBucket;
  private final Clock clock;

  public TxboxHealthIndicator(
      OutboxStore store, String subscription, Optional<ContextBound<Relay>> relay, Duration maxPendingAge,
      int limitPerBucket, Clock clock) {
    super("txbox health check failed");
    this.store = store;
    this.subscription = subscription;
    this.relay = relay;
    this.maxPendingAge = maxPendingAge;
    this.limitPerBucket = limitPerBucket;
    this.clock = clock;
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
