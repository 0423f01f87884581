package io.txbox.postgres.internal;

import io.txbox.jdbc.spi.Transactions;
import io.txbox.postgres.PostgresTables;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.OptionalInt;

/**
 * The janitor's lock, one per outbox across all instances: a transaction-level advisory lock
 * tried, never waited for, so that a second janitor skips instead of queueing.
 */
public final class JanitorLock {
  private final Transactions tx;
  private final String name;

  public JanitorLock(PostgresTables tables, Transactions tx) {
    this.tx = tx;
    this.name = "txbox janitor " + tables.channel();
  }

  /** Runs {@code work} in its own transaction if the lock is had; empty when another janitor holds it. */
  public OptionalInt run(String what, Transactions.Work<Integer> work) {
    return tx.inTransaction(what, c -> {
      try (PreparedStatement lock = c.prepareStatement("SELECT pg_try_advisory_xact_lock(hashtext(?))")) {
        lock.setString(1, name);
        try (ResultSet rs = lock.executeQuery()) {
          rs.next();
          if (!rs.getBoolean(1)) {
            return OptionalInt.empty();
          }
        }
      }
      return OptionalInt.of(work.run(c));
    });
  }
}
