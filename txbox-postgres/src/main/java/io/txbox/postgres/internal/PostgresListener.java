package io.txbox.postgres.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds one connection in {@code LISTEN} on the outbox channel and calls back on every
 * notification. Reconnects after errors; the relay polls meanwhile, so a lost notification only
 * costs latency.
 *
 * <p>Once listening, it sends a notification from another connection and waits for it: a
 * connection that goes through a pooler lending server connections per transaction (PgBouncer in
 * transaction mode, RDS Proxy) listens on a server connection it then gives back, and never hears
 * anything. Such a listener says so once, with the fix, and stops; the relay goes on polling. The
 * check must come from another connection: a notification sent on the listening one arrives while
 * the pooler still links it to the server connection that listens, and would prove nothing.
 */
public final class PostgresListener implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PostgresListener.class);
  private static final int POLL_MILLIS = 500;
  /** How long the listener waits for its own notification before it concludes none can arrive. */
  private static final long CHECK_MILLIS = 3_000;
  private static final String CHECK = "txbox-listen-check";

  private final DataSource dataSource;
  private final String channel;
  private final Runnable onNotify;
  private final Thread thread;
  private volatile boolean running = true;
  private volatile boolean deaf;

  public PostgresListener(DataSource dataSource, String channel, Runnable onNotify) {
    this.dataSource = dataSource;
    this.channel = channel;
    this.onNotify = onNotify;
    this.thread = new Thread(this::listen, "txbox-listen-" + channel);
    thread.setDaemon(true);
    thread.start();
  }

  private void listen() {
    while (running) {
      try (Connection c = dataSource.getConnection()) {
        c.setAutoCommit(true);
        try (Statement s = c.createStatement()) {
          s.execute("LISTEN \"" + channel + "\"");
        }
        notifyFromAnotherConnection(c);
        PGConnection pg = c.unwrap(PGConnection.class);
        if (!hearsItself(pg)) {
          deaf = true;
          log.warn("LISTEN on {} hears nothing, not even its own NOTIFY: the connection goes through a pooler"
              + " that lends server connections per transaction (PgBouncer in transaction mode, RDS Proxy)?"
              + " The relay polls instead, its idle interval apart; to be woken at each commit, let it listen"
              + " on a connection that reaches PostgreSQL directly or through session pooling"
              + " (txbox relay --listen-jdbc-url, PostgresOutboxStore.Builder.listenDataSource)", channel);
          return;
        }
        while (running) {
          PGNotification[] notifications = pg.getNotifications(POLL_MILLIS);
          if (notifications != null && notifications.length > 0) {
            onNotify.run();
          }
        }
      } catch (SQLException | RuntimeException e) {
        if (running) {
          log.warn("LISTEN on {} failed, reconnecting in 1 s (the relay polls meanwhile): {}",
              channel, e.toString());
          pause();
        }
      }
    }
  }

  /**
   * Sends the check from another connection; from {@code listening} itself when the data source
   * has no other to give (a pool of one), where the check can still find a connection that is
   * lost, though not a transaction pooler.
   */
  private void notifyFromAnotherConnection(Connection listening) throws SQLException {
    Connection other;
    try {
      other = dataSource.getConnection();
    } catch (SQLException e) {
      other = null;
    }
    try (Statement s = (other == null ? listening : other).createStatement()) {
      if (other != null) {
        other.setAutoCommit(true);
      }
      s.execute("SELECT pg_notify('" + channel + "', '" + CHECK + "')");
    } finally {
      if (other != null) {
        other.close();
      }
    }
  }

  /**
   * Whether it found that its {@code LISTEN} hears nothing (a pooler lending server connections per
   * transaction) and gave up: the relay polls.
   */
  public boolean hearsNothing() {
    return deaf;
  }

  /** Whether the check notification arrives within {@link #CHECK_MILLIS}; others met meanwhile still wake the relay. */
  private boolean hearsItself(PGConnection pg) throws SQLException {
    long deadline = System.nanoTime() + CHECK_MILLIS * 1_000_000;
    while (running && System.nanoTime() < deadline) {
      PGNotification[] notifications = pg.getNotifications(POLL_MILLIS);
      if (notifications != null && notifications.length > 0) {
        onNotify.run();
        for (PGNotification n : notifications) {
          if (CHECK.equals(n.getParameter())) {
            return true;
          }
        }
      }
    }
    return !running;
  }

  private void pause() {
    try {
      Thread.sleep(1000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      running = false;
    }
  }

  @Override
  public void close() {
    running = false;
    try {
      thread.join(POLL_MILLIS * 4L);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
