package io.txbox.spring.internal;

import io.txbox.cdc.LogicalRelay;
import io.txbox.cdc.LogicalReplication;
import io.txbox.cdc.ServerWait;
import io.txbox.cdc.SlotStatus;
import io.txbox.spring.RelayState;
import io.txbox.spring.TxboxService;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The logical relay's state, from the slot the server keeps: down when the slot is missing or
 * invalidated (it can never be streamed again) or still being created, when this application's relay
 * has stopped, when a call of it to the server has waited past its wait warning ({@link
 * LogicalRelay#stalled()}), or when the oldest event it read and has not confirmed is older than
 * the threshold. A relay that stands by while another instance streams the slot is up.
 */
public final class LogicalRelayState implements RelayState {
  private final LogicalReplication replication;
  private final Supplier<Optional<TxboxService<LogicalRelay>>> relay;
  private final Duration maxPendingAge;

  /**
   * @param relay this application's relay bean, absent when it runs none
   */
  public LogicalRelayState(LogicalReplication replication, Supplier<Optional<TxboxService<LogicalRelay>>> relay,
      Duration maxPendingAge) {
    this.replication = replication;
    this.relay = relay;
    this.maxPendingAge = maxPendingAge;
  }

  @Override
  public boolean isTroubled() {
    return running().filter(LogicalRelay::isTroubled).isPresent();
  }

  @Override
  public boolean report(Map<String, Object> details) {
    boolean up = reportSlot(details);
    if (relay.get().isPresent()) {
      Optional<LogicalRelay> running = running();
      details.put("relay", running.map(r -> r.isStreaming() ? "streaming" : "standby").orElse("stopped"));
      running.map(LogicalRelay::problem).ifPresent(problem -> details.put("problem", problem));
      Duration lag = running.map(LogicalRelay::lag).orElse(Duration.ZERO);
      details.put("oldestPendingAge", lag.toString());
      details.put("maxPendingAge", maxPendingAge.toString());
      Optional<ServerWait> stalled = running.flatMap(LogicalRelay::stalled);
      stalled.ifPresent(w -> details.put("waitingFor", w.what() + " (since " + w.since() + ")"));
      up &= running.isPresent() && lag.compareTo(maxPendingAge) <= 0 && stalled.isEmpty();
    }
    return up;
  }

  private boolean reportSlot(Map<String, Object> details) {
    details.put("slot", replication.slot());
    Optional<SlotStatus> status = replication.status();
    if (status.isEmpty()) {
      details.put("slotState", "missing: run txbox migrate --logical, or start with txbox.migrate=true");
      return false;
    }
    SlotStatus s = status.get();
    details.put("slotState", s.invalidated() ? "invalidated: see the runbook, \"A lost replication slot\""
        : s.beingCreated() ? s.state() : "ok");
    details.put("slotActive", s.active());
    details.put("lagBytes", s.lagBytes());
    details.put("retainedBytes", s.retainedBytes());
    return !s.invalidated() && !s.beingCreated();
  }

  private Optional<LogicalRelay> running() {
    return relay.get().flatMap(TxboxService::current).filter(LogicalRelay::isRunning);
  }
}
