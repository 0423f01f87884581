package io.txbox.spring.internal;

import io.txbox.Relay;
import io.txbox.spi.Backlog;
import io.txbox.spi.OutboxStore;
import io.txbox.spring.RelayState;
import io.txbox.spring.TxboxService;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The table relay's state: down when this application's relay has stopped, or when the oldest event
 * nobody relayed is older than the threshold, the silent backlog that nobody notices, whatever its
 * cause (every relay down, a broker refusing, a long transaction holding delivery back).
 */
public final class TableRelayState implements RelayState {
  private final OutboxStore store;
  private final String subscription;
  private final Supplier<Optional<TxboxService<Relay>>> relay;
  private final Duration maxPendingAge;
  private final int limitPerBucket;
  private final Clock clock;

  /**
   * @param relay this application's relay bean, absent when it runs none
   */
  public TableRelayState(OutboxStore store, String subscription, Supplier<Optional<TxboxService<Relay>>> relay,
      Duration maxPendingAge, int limitPerBucket, Clock clock) {
    this.store = store;
    this.subscription = subscription;
    this.relay = relay;
    this.maxPendingAge = maxPendingAge;
    this.limitPerBucket = limitPerBucket;
    this.clock = clock;
  }

  @Override
  public boolean isTroubled() {
    return running().filter(Relay::isTroubled).isPresent();
  }

  @Override
  public boolean report(Map<String, Object> details) {
    boolean up = true;
    details.put("subscription", subscription);
    if (relay.get().isPresent()) {
      Optional<Relay> running = running();
      details.put("relay", running.isPresent() ? "running" : "stopped");
      running.ifPresent(r -> {
        details.put("instance", r.instanceId());
        details.put("ownedBuckets", r.ownedBuckets().size());
      });
      up = running.isPresent();
    }
    Optional<Backlog> backlog = store.backlog(subscription, limitPerBucket);
    if (backlog.isPresent()) {
      Backlog b = backlog.get();
      Duration age = b.oldestAge(clock.instant());
      details.put("pending", b.capped() ? b.pending() + "+" : b.pending());
      details.put("oldestPendingAge", age.toString());
      details.put("maxPendingAge", maxPendingAge.toString());
      up &= age.compareTo(maxPendingAge) <= 0;
    }
    return up;
  }

  private Optional<Relay> running() {
    return relay.get().flatMap(TxboxService::current).filter(Relay::isRunning);
  }
}
