package io.txbox.jdbc.spi;

import io.txbox.TxboxException;
import io.txbox.spi.support.Rollback;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.OptionalInt;
import javax.sql.DataSource;

/**
 * Runs a unit of relay work in its own short transaction, turning SQL errors into TxboxException.
 * A {@code setup} statement, when given, runs first in every transaction: a setting that must
 * hold for the transaction and no longer ({@code SET LOCAL ...}), which a connection pooler that
 * lends its server connections per transaction cannot keep from one transaction to the next.
 */
public final class Transactions {
  private final DataSource dataSource;
  private final String setup;

  public Transactions(DataSource dataSource) {
    this(dataSource, null);
  }

  /** Runs {@code setup} (a statement without parameters) first in every transaction; null for none. */
  public Transactions(DataSource dataSource, String setup) {
    this.dataSource = dataSource;
    this.setup = setup;
  }

  /** Work done on one connection. */
  @FunctionalInterface
  public interface Work<T> {
    T run(Connection connection) throws SQLException;
  }

  /** Runs {@code work} and commits; rolls back on any error. {@code what} names it in errors. */
  public <T> T inTransaction(String what, Work<T> work) {
    return run(what, OptionalInt.empty(), work);
  }

  /**
   * Runs {@code work} at READ COMMITTED and commits, then gives the connection back at its own
   * level. For rows that many relay instances update at once, such as leases and checkpoints:
   * at REPEATABLE READ InnoDB keeps a lock on every row an UPDATE or a locking read scans, not only
   * on those it matches, and concurrent scans in different orders deadlock.
   */
  public <T> T inReadCommitted(String what, Work<T> work) {
    return run(what, OptionalInt.of(Connection.TRANSACTION_READ_COMMITTED), work);
  }

  private <T> T run(String what, OptionalInt isolation, Work<T> work) {
    try (Connection c = connect(what)) {
      // asked only when it changes: pgjdbc may answer it with a round trip
      int own = isolation.isPresent() ? c.getTransactionIsolation() : Connection.TRANSACTION_NONE;
      c.setAutoCommit(false);
      Throwable failure = null;
      try {
        if (isolation.isPresent()) {
          c.setTransactionIsolation(isolation.getAsInt()); // before the first statement
        }
        if (setup != null) {
          try (Statement s = c.createStatement()) {
            s.execute(setup);
          }
        }
        T result = work.run(c);
        c.commit();
        return result;
      } catch (SQLException | RuntimeException e) {
        failure = e;
        Rollback.after(c, e);
        throw e;
      } finally {
        if (isolation.isPresent()) {
          restoreIsolation(c, own, failure);
        }
      }
    } catch (SQLException e) {
      throw new TxboxException(what + " failed: " + e.getMessage() + poolerHint(e), e);
    }
  }

  /**
   * What to do when a named prepared statement is missing, or there already (SQLSTATE 26000,
   * 42P05): the connection goes through a pooler that lends server connections per transaction,
   * where the driver's statements do not outlive the transaction that prepared them.
   */
  private static String poolerHint(SQLException e) {
    String state = e.getSQLState();
    return "26000".equals(state) || "42P05".equals(state)
        ? " (the connection goes through a pooler that lends server connections per transaction, such as PgBouncer"
            + " in transaction mode, where prepared statements do not last: put prepareThreshold=0 in the JDBC URL)"
        : "";
  }

  /**
   * Gives the connection back at its own level, so that the pool's next user gets the level it
   * expects. When the work failed, a failure here (the connection broke, say) is added to the
   * work's error rather than put in its place: the work's error says what went wrong.
   */
  private static void restoreIsolation(Connection c, int own, Throwable failure) throws SQLException {
    try {
      c.setTransactionIsolation(own);
    } catch (SQLException | RuntimeException e) {
      if (failure == null) {
        throw e;
      }
      failure.addSuppressed(e);
    }
  }

  private Connection connect(String what) {
    try {
      return dataSource.getConnection();
    } catch (SQLException e) {
      throw new TxboxException(what + " failed: cannot connect to the database (check the JDBC URL,"
          + " user and password, and that the server is up): " + e.getMessage(), e);
    }
  }
}
