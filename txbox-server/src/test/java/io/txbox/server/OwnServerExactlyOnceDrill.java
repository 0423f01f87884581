package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;

/**
 * An exactly-once drill on PostgreSQL servers of the test's own, which it crashes or fails over:
 * the outbox in schema {@code public}, reached through {@link #url()}, and a writer that writes on
 * through the outage. What must be delivered is what the database kept: the outbox rows read
 * after it, whether or not their writers saw the commit return.
 */
abstract class OwnServerExactlyOnceDrill extends ExactlyOnceDrill {
  HikariDataSource pool;
  PostgresOutboxStore store;

  /** The JDBC URL of the outbox's database, for the relays and the test's pool. */
  abstract String url();

  /** Creates the outbox through {@link #url()}; called once the servers run. */
  void createOutbox() {
    pool = TestDatabase.pool(url(), 8);
    store = PostgresOutboxStore.builder(pool).build();
    store.migrate();
  }

  @AfterEach
  void closePool() {
    if (pool != null) {
      pool.close();
    }
  }

  @Override
  List<String> databaseArgs() {
    return List.of("--jdbc-url", url());
  }

  @Override
  DataSource dataSource() {
    return pool;
  }

  @Override
  Outbox outbox() {
    return Outbox.create(store);
  }

  @Override
  Map<String, List<String>> expectedByKey() throws SQLException {
    return OutboxRows.byKey(pool, store.outboxTable());
  }

  @Override
  int owners() throws SQLException {
    return OutboxRows.owners(pool, "public");
  }

  @Override
  long deadLetters() throws SQLException {
    try (Connection c = pool.getConnection();
        PreparedStatement p = c.prepareStatement("SELECT count(*) FROM public.txbox_dead_letter");
        ResultSet rs = p.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * The test's own pool hands out a connection used in the last 500 ms unchecked, and the outage
   * broke every one it held: they go, so that the reads after it get live ones (a CI run read
   * through a broken one).
   */
  void dropBrokenConnections() {
    pool.getHikariPoolMXBean().softEvictConnections();
  }

  /**
   * Writes at least {@code count} events, {@code perTransaction} to a transaction; a transaction
   * the outage cuts off is written again as new events, since whether it committed is unknown (the
   * outbox rows after the outage are what must be delivered).
   */
  void writeThroughOutages(int count, int perTransaction) {
    for (int i = 0; i < count; ) {
      List<Message> batch = new ArrayList<>(perTransaction);
      for (int j = 0; j < perTransaction; j++) {
        batch.add(Message.builder().type("Test").destination(topic).key("key-" + ((i + j) % 50))
            .payload(Integer.toString(i + j).getBytes(StandardCharsets.UTF_8)).build());
      }
      try (Connection c = pool.getConnection()) {
        c.setAutoCommit(false);
        outbox().send(c, batch);
        c.commit();
        i += perTransaction;
      } catch (SQLException | RuntimeException | AssertionError e) {
        // The commit's outcome is unknown; the rows after the outage are what must be delivered.
        // AssertionError: pgjdbc's own assertion on a statement's connection (live under the
        // tests' -ea) fires when the outage cuts that connection mid-statement (a CI run saw it).
        LockSupport.parkNanos(Duration.ofMillis(100).toNanos()); // the server restarts or is promoted
      }
    }
  }
}
