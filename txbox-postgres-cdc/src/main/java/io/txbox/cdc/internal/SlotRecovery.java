package io.txbox.cdc.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Looks at the slot before each session and says what must be relayed from the outbox table
 * before streaming. A slot missing where the checkpoint says it was streamed (a standby promoted
 * before PostgreSQL 17 has none) is created again; a slot that a failover did not keep in step
 * from the former primary is taken as it is. Either way the outbox rows since the checkpoint are
 * relayed first ({@link OutboxCatchUp}). Events written as WAL messages since the checkpoint exist
 * in no table: that range is recorded, logged and shown by {@code txbox status}.
 */
final class SlotRecovery {
  private static final Logger log = LoggerFactory.getLogger(SlotRecovery.class);

  private final String slot;
  private final SlotCheckpoints checkpoints;
  private final DataSource dataSource;
  private final ServerCalls calls;

  SlotRecovery(String slot, SlotCheckpoints checkpoints, DataSource dataSource, ServerCalls calls) {
    this.slot = slot;
    this.checkpoints = checkpoints;
    this.dataSource = dataSource;
    this.calls = calls;
  }

  /**
   * The checkpoint to relay the outbox table from before streaming, or empty to stream at once:
   * no checkpoint yet (a missing slot is then reported by the session), or the slot is this
   * server's own, kept in step by a failover, or lost (which stops loudly when streamed).
   */
  Optional<SlotCheckpoints.Mark> catchUpFrom() throws SQLException {
    String reading = "the database to read the checkpoint of slot " + slot + " and the slot itself";
    Optional<SlotCheckpoints.Mark> mark = calls.run(reading, checkpoints::read);
    if (mark.isEmpty()) {
      return Optional.empty();
    }
    SlotCheckpoints.Mark from = mark.get();
    Optional<SlotCheckpoints.Slot> present = calls.run(reading, checkpoints::slot);
    int timeline = calls.run(reading, checkpoints::timeline);
    long start;
    if (present.isPresent()) {
      if (from.timeline() == timeline || present.get().synced() || present.get().lost()) {
        return Optional.empty();
      }
      start = present.get().confirmedLsn();
      log.warn("slot {}: the server's timeline moved from {} to {} since the relay's last checkpoint ({}), and the"
              + " slot was not kept in step from the former primary: relaying from the outbox table every event"
              + " the checkpoint does not cover before streaming it", slot, from.timeline(), timeline,
          from.takenAt());
    } else {
      start = createSlot();
      log.warn("slot {}: missing on this server (timeline {}), though the relay's last checkpoint of it (events"
              + " committed before {}, timeline {}) shows it streamed: a failover to a standby that had no copy of"
              + " it? Created it again at {}, and relaying from the outbox table every event the checkpoint does not"
              + " cover before streaming it", slot, timeline, from.takenAt(), from.timeline(), Lsn.format(start));
    }
    if (from.walMessages() && start > from.lsn()) {
      recordGap(from, start, timeline);
    }
    return Optional.of(from);
  }

  private long createSlot() throws SQLException {
    return calls.call("the server to create slot " + slot + " again: it waits for every transaction open when the"
        + " creation began to end, so a transaction left open, or commits waiting for a synchronous standby that is"
        + " gone (synchronous_standby_names), hold it; txbox status names both", () -> {
          try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(true);
            return checkpoints.createSlot(c);
          }
        });
  }

  private void recordGap(SlotCheckpoints.Mark from, long start, int timeline) {
    checkpoints.recordGap(from, start);
    log.error("slot {}: events written as WAL messages from {} (WAL {}, timeline {}) up to now (WAL {}, timeline {})"
            + " were not relayed and cannot be: they exist in no table, and no slot holds that WAL any more. Send"
            + " them again from their source, then run txbox logical acknowledge-gap --slot {}. Events written as"
            + " outbox rows are relayed from the table", slot, from.takenAt(), Lsn.format(from.lsn()),
        from.timeline(), Lsn.format(start), timeline, slot);
  }
}
