package io.txbox.spi.support;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * Rolls a transaction back after a failure without losing the failure: when the rollback fails
 * too (the connection broke, which is often why the work failed), its error is added to the
 * original as a suppressed exception instead of replacing it.
 *
 * <pre>{@code
 * try {
 *   work(tx);
 *   tx.commit();
 * } catch (SQLException | RuntimeException e) {
 *   Rollback.after(tx, e);
 *   throw e;
 * }
 * }</pre>
 */
public final class Rollback {
  private Rollback() {}

  /** Rolls {@code transaction} back; a failing rollback is recorded on {@code failure}. */
  public static void after(Connection transaction, Throwable failure) {
    try {
      transaction.rollback();
    } catch (SQLException | RuntimeException rollbackFailed) {
      failure.addSuppressed(rollbackFailed);
    }
  }
}
