package io.txbox.spi.support;

import io.txbox.TxboxException;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/** Runs a unit of relay work in its own short transaction, turning SQL errors into TxboxException. */
public final class Transactions {
  private final DataSource dataSource;

  public Transactions(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /** Work done on one connection. */
  @FunctionalInterface
  public interface Work<T> {
    T run(Connection connection) throws SQLException;
  }

  /** Runs {@code work} and commits; rolls back on any error. {@code what} names it in errors. */
  public <T> T inTransaction(String what, Work<T> work) {
    try (Connection c = connect(what)) {
      c.setAutoCommit(false);
      try {
        T result = work.run(c);
        c.commit();
        return result;
      } catch (SQLException | RuntimeException e) {
        Rollback.after(c, e);
        throw e;
      }
    } catch (SQLException e) {
      throw new TxboxException(what + " failed: " + e.getMessage(), e);
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
