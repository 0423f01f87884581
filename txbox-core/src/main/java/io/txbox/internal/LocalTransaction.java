package io.txbox.internal;

import io.txbox.spi.support.Rollback;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/** Runs work in a transaction of its own on a connection of the data source, then commits. */
public final class LocalTransaction {
  private LocalTransaction() {}

  /** What runs inside the transaction. */
  public interface Work<T> {
    T run(Connection tx) throws SQLException;
  }

  /** Runs {@code work} and commits; rolls back, keeping the original error, when it throws. */
  public static <T> T run(DataSource dataSource, Work<T> work) throws SQLException {
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      try {
        T result = work.run(tx);
        tx.commit();
        return result;
      } catch (SQLException | RuntimeException e) {
        Rollback.after(tx, e);
        throw e;
      }
    }
  }
}
