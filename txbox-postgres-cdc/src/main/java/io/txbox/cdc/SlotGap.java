package io.txbox.cdc;

import java.time.Instant;

/**
 * A stretch of WAL whose events written as WAL messages a slot's relays could not read: the slot
 * was lost (a failover to a standby without it, before PostgreSQL 17's failover slots) and made
 * again further on. Events written as outbox rows in that stretch were relayed from the table;
 * WAL messages exist nowhere else. It stays until an operator acknowledges it ({@code txbox
 * logical acknowledge-gap}), and until then {@code txbox status} is DEGRADED.
 *
 * <pre>{@code
 * replication.gap().ifPresent(gap -> log.error(gap.describe()));
 * }</pre>
 *
 * @param slot the slot
 * @param fromLsn the WAL position of the relays' last checkpoint before the loss
 * @param from when that checkpoint's snapshot was taken: every event committed before it was
 *     delivered, and one committed after it may not have been
 * @param toLsn where the new slot's stream began
 * @param to when the relay made the slot again
 */
public record SlotGap(String slot, String fromLsn, Instant from, String toLsn, Instant to) {
  /** One sentence: what may be lost, and what to do. */
  public String describe() {
    return "slot " + slot + ": events written as WAL messages between " + from + " (WAL " + fromLsn + ") and " + to
        + " (WAL " + toLsn + ") were not relayed and cannot be: the slot was lost in a failover. Send them again"
        + " from their source, then run txbox logical acknowledge-gap --slot " + slot;
  }
}
