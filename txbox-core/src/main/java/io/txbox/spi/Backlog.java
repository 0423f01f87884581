package io.txbox.spi;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * The events a subscription has not relayed yet, as far as the store counted them.
 *
 * <pre>{@code
 * store.backlog("default", 10_000).ifPresent(b ->
 *     log.info("{}{} pending, oldest {} old", b.pending(), b.capped() ? "+" : "", b.oldestAge(Instant.now())));
 * }</pre>
 *
 * @param pending events written and committed but not yet relayed (at least this many when
 *     {@code capped})
 * @param capped whether counting stopped at the store's limit, so more may be pending
 * @param oldestCreatedAt when the oldest pending event was written; empty when none is pending
 */
public record Backlog(long pending, boolean capped, Optional<Instant> oldestCreatedAt) {

  /** How long the oldest pending event has waited at {@code now}; zero when none is pending. */
  public Duration oldestAge(Instant now) {
    return oldestCreatedAt.map(t -> Duration.between(t, now)).filter(d -> !d.isNegative()).orElse(Duration.ZERO);
  }
}
