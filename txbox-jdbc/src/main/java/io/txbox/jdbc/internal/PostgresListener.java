package io.txbox.jdbc.internal;

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
 */
public final class PostgresListener implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PostgresListener.class);
  private static final int POLL_MILLIS = 500;

  private final DataSource dataSource;
  private final String channel;
  private final Runnable onNotify;
  private final Thread thread;
  private volatile boolean running = true;

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
        PGConnection pg = c.unwrap(PGConnection.class);
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
