package io.txbox.mariadb;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.spi.OutboxStore;
import io.txbox.testkit.JanitorStoreContract;
import io.txbox.testkit.TestMariaDb;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The janitor on MariaDB: the janitor contract, and what its bucket-by-bucket deletes pass over.
 */
class MariaDbJanitorTest extends JanitorStoreContract {
  private static final int BUCKETS = 4;
  private static final Instant TWO_DAYS_AGO = Instant.now().minus(Duration.ofDays(2));
  private TestMariaDb db;
  private MariaDbOutboxStore store;

  @Override
  protected Parts freshStore() {
    db = TestMariaDb.create();
    store = newStore();
    store.migrate();
    return new Parts(store.relay(), store.janitor());
  }

  @Override
  protected OutboxStore storeOnSameTables() {
    return newStore().relay();
  }

  private MariaDbOutboxStore newStore() {
    return MariaDbOutboxStore.builder(db.dataSource()).buckets(BUCKETS).build();
  }

  @Override
  protected DataSource dataSource() {
    return db.dataSource();
  }

  @Override
  protected long outboxRows() throws SQLException {
    return db.queryLong("SELECT COUNT(*) FROM txbox_outbox");
  }

  @AfterEach
  void dropDatabase() {
    db.close();
  }

  @Test
  void aBucketWhoseOldestRelayedEventIsWithinTheRetentionIsPassedOver() throws SQLException {
    Outbox outbox = Outbox.create(store.writer());
    write(outbox, 0, 20, Instant.now());
    write(outbox, 20, 20, TWO_DAYS_AGO); // older by their clock, but behind young events in every bucket
    checkpoint("fast", Long.MAX_VALUE);
    checkpoint("slow", Long.MAX_VALUE);

    assertThat(Janitor.builder(store.janitor()).outboxRetention(Duration.ofDays(1)).build().runOnce().outboxEvents())
        .as("they go once the events before them do").isZero();
    assertThat(db.queryLong("SELECT COUNT(*) FROM txbox_outbox")).isEqualTo(40);
  }

  /** Events {@code first} to {@code first + count - 1}, one per transaction, created at {@code createdAt}. */
  private void write(Outbox outbox, int first, int count, Instant createdAt) {
    for (int i = first; i < first + count; i++) {
      try (Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        outbox.send(c, Message.builder().type("T").destination("d").key("k" + i)
            .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).createdAt(createdAt).build());
        c.commit();
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  /** Moves {@code subscription}'s checkpoint in every bucket to its newest event at or below {@code cutoff}. */
  private void checkpoint(String subscription, long cutoff) throws SQLException {
    db.execute("UPDATE txbox_subscription s SET position = COALESCE((SELECT MAX(o.position) FROM txbox_outbox o"
        + " WHERE o.bucket = s.bucket AND o.position <= " + cutoff + "), 0) WHERE subscription = '" + subscription + "'");
  }
}
