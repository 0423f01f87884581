package io.txbox.server;

import io.txbox.cdc.SlotReport;
import io.txbox.cdc.SlotStatus;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.StoreStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The verdict of {@code txbox status}, read once and shared by the command and the relay's
 * readiness probe, so both say the same: the store's status, the replication slots of its tables,
 * and every reason delivery is not healthy.
 *
 * <pre>{@code
 * StatusReport report = StatusReport.read(ds, store, 1000, Duration.ofMinutes(5));
 * if (!report.healthy()) System.out.println(String.join("; ", report.problems()));
 * }</pre>
 *
 * @param problems why delivery is not healthy, one sentence each; empty when it is
 */
record StatusReport(StoreStatus status, List<SlotStatus> slots, List<String> problems) {

  /** Reads the status of {@code store}'s tables; counting stops at {@code limitPerBucket} events per bucket. */
  static StatusReport read(DataSource ds, JdbcOutboxStore store, int limitPerBucket, Duration maxPendingAge) {
    StoreStatus status = store.operator().status(limitPerBucket);
    SlotReport slots = SlotReport.read(ds, store); // none on a database without slots
    List<String> problems = new ArrayList<>(status.problems(maxPendingAge));
    problems.addAll(slotProblems(slots.slots()));
    problems.addAll(slots.problems()); // failover: gaps, slots no standby keeps
    return new StatusReport(status, slots.slots(), List.copyOf(problems));
  }

  boolean healthy() {
    return problems.isEmpty();
  }

  /**
   * A slot no relay streams keeps WAL for nothing; an invalidated one can never be streamed again;
   * one being created streams nothing until the transactions open when its creation began end.
   */
  private static List<String> slotProblems(List<SlotStatus> slots) {
    List<String> problems = new ArrayList<>();
    for (SlotStatus s : slots) {
      if (s.invalidated()) {
        problems.add("slot " + s.slot() + " was invalidated by the server: see the runbook, \"A lost replication slot\"");
      } else if (s.beingCreated()) {
        problems.add("slot " + s.slot() + " is being created and streams nothing yet: the server waits for every"
            + " transaction open when the creation began to end (see the oldest open transaction; a commit waiting"
            + " for a synchronous standby stays open too)");
      } else if (!s.active()) {
        problems.add("slot " + s.slot() + ": no relay streams it, and the server keeps " + s.retainedBytes()
            + " bytes of WAL for it");
      }
    }
    return problems;
  }
}
