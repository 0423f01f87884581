package io.txbox.jdbc;

import io.txbox.TxboxException;
import io.txbox.jdbc.spi.Database;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;

/**
 * How a data source's connections reach the database: each holding its own server connection for
 * as long as it is open (directly, or through a pooler in session mode), or lent one server
 * connection per transaction by a pooler (PgBouncer in transaction mode, RDS Proxy). In the second
 * case nothing outlives a transaction: a server-side prepared statement, a {@code SET}, a
 * {@code LISTEN}. txbox relies on none of these; this tells which way a data source goes, so that
 * {@code txbox} can turn the driver's named statements off and say where {@code LISTEN} cannot
 * work, and {@code txbox status} can show it.
 *
 * <pre>{@code
 * if (ServerConnections.of(dataSource, database) == ServerConnections.PER_TRANSACTION) { ... }
 * }</pre>
 */
public enum ServerConnections {
  /** Each client connection keeps its server connection: session state lasts. */
  PER_SESSION,
  /** A pooler lends a server connection per transaction: session state does not last. */
  PER_TRANSACTION;

  /** How long the second look may wait for a server connection before the wait itself tells. */
  private static final long WAIT_MILLIS = 1_000;
  /**
   * Looks taken before concluding that server connections are kept per session: one look can
   * miss a transaction pooler when other clients take and give back server connections meanwhile
   * (two relays starting together did), and a miss means named statements and an error loop.
   */
  private static final int LOOKS = 10;

  /**
   * Looks, with two of the data source's connections, up to {@value #LOOKS} times: {@code a} asks
   * its server session's id ({@link Database#sessionIdQuery}), {@code b} opens a transaction and asks its own, and {@code a} asks
   * again. A connection that keeps its server connection answers the same id every time, and
   * {@code b} never has it. Lent per transaction, the server connection {@code a} gave back is
   * usually the one a pooler lends next (the last one given back), so {@code b} holds it and
   * {@code a} gets another, or waits while {@code b}'s transaction holds the pooler's only one;
   * one look that shows either settles it.
   *
   * @throws TxboxException when the database cannot be reached
   */
  public static ServerConnections of(DataSource dataSource, Database database) {
    String sessionId = database.sessionIdQuery();
    try (Connection a = dataSource.getConnection(); Connection b = dataSource.getConnection()) {
      a.setAutoCommit(true);
      b.setAutoCommit(false);
      for (int look = 0; look < LOOKS; look++) {
        if (lentPerTransaction(a, b, sessionId)) {
          return PER_TRANSACTION;
        }
      }
      return PER_SESSION;
    } catch (SQLException | ExecutionException | TimeoutException e) {
      throw new TxboxException("cannot tell how connections reach the database: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TxboxException("interrupted while looking at the database's connections", e);
    }
  }

  /** One look; see {@link #of}. */
  private static boolean lentPerTransaction(Connection a, Connection b, String sessionId)
      throws SQLException, ExecutionException, TimeoutException, InterruptedException {
    long first = session(a, sessionId);
    try {
      long held = session(b, sessionId);
      CompletableFuture<Long> second = CompletableFuture.supplyAsync(() -> {
        try {
          return session(a, sessionId);
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      });
      try {
        long again = second.get(WAIT_MILLIS, TimeUnit.MILLISECONDS);
        return held == first || again != first;
      } catch (TimeoutException e) {
        b.rollback(); // gives the pooler's one server connection back, and a's look goes through
        second.get(WAIT_MILLIS * 30, TimeUnit.MILLISECONDS);
        return true;
      }
    } finally {
      b.rollback();
    }
  }

  private static long session(Connection c, String sessionId) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sessionId)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
