package io.txbox.mariadb;

import io.txbox.Message;
import io.txbox.jdbc.spi.JdbcInboxStore;
import io.txbox.mariadb.internal.MariaDbDialect;
import io.txbox.mariadb.internal.MariaDbInboxQueue;
import io.txbox.mariadb.internal.MariaDbTables;
import io.txbox.spi.InboxStore;
import io.txbox.spi.QueuedMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

/**
 * The inbox on MariaDB (and MySQL 8 where the SQL allows): table {@code <prefix>inbox} in the
 * connection's current database, created by the same migration as the outbox
 * ({@link MariaDbOutboxStore#migrate()} or {@code txbox migrate}).
 *
 * <pre>{@code
 * MariaDbInboxStore store = MariaDbInboxStore.builder().tablePrefix("txbox_").build();
 * Inbox inbox = Inbox.create(dataSource, store);
 * }</pre>
 *
 * <p>Recording is an {@code INSERT IGNORE} on the primary key {@code (consumer, message_id)}: no
 * row inserted means a duplicate, which is normal operation and so must not be an error (MariaDB
 * Connector/J logs every server error at WARN). {@code IGNORE} also turns truncations into
 * warnings, but nothing here can be truncated: the consumer is checked to 100 ASCII characters,
 * the width of its column, and the id is a UUID's 36. A concurrent delivery of the same message
 * to the same consumer waits on the first one's row lock, then finds the duplicate once the first
 * commits, or records the message itself if the first rolled back: the same as on PostgreSQL.
 *
 * <p>Differences from {@code PostgresInboxStore}, each for a reason:
 * <ul>
 *   <li>A batch ({@link #admitAll}) is admitted one message at a time, in the order given. Two
 *       instances admitting the same messages in different orders can deadlock; InnoDB then
 *       rolls one back, and its messages come again from the broker.</li>
 *   <li>An {@link io.txbox.InboxQueue} worker holds its key by locking the key's first message
 *       ({@code FOR UPDATE SKIP LOCKED}) instead of an advisory lock, which MariaDB has only per
 *       session. Only a key's first message is ever processed, so that row stands for the key,
 *       and messages enqueued meanwhile are not held up.</li>
 * </ul>
 */
public final class MariaDbInboxStore extends JdbcInboxStore {
  private final MariaDbTables tables;
  private final MariaDbInboxQueue queue;
  private final String record;

  private MariaDbInboxStore(MariaDbTables tables) {
    super(tables, MariaDbDialect.INSTANCE, tables.render("INSERT INTO {inbox_key} (consumer, `key`, last_sequence)"
        + " VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE last_sequence = GREATEST(last_sequence, VALUES(last_sequence))"));
    this.tables = tables;
    this.queue = new MariaDbInboxQueue(tables);
    this.record = tables.render("INSERT IGNORE INTO {inbox} (consumer, message_id, processed_at) VALUES (?, ?, "
        + "UTC_TIMESTAMP(6))");
  }

  /** A builder with the default table prefix of {@link MariaDbOutboxStore}, {@code txbox_}. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public boolean record(Connection tx, String consumer, UUID messageId) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(record)) {
      p.setString(1, consumer);
      p.setString(2, messageId.toString());
      return p.executeUpdate() == 1;
    } catch (SQLException e) {
      throw tables.explainMissing(e); // the first statement a consumer-only service runs
    }
  }

  @Override
  public Admission admit(Connection tx, String consumer, Message m) throws SQLException {
    String queueKey = InboxStore.queueKey(m);
    boolean parked;
    try {
      parked = parking.isParked(tx, consumer, queueKey);
    } catch (SQLException e) {
      throw tables.explainMissing(e);
    }
    if (!parked) {
      return record(tx, consumer, m.id()) ? Admission.NEW : Admission.DUPLICATE;
    }
    return storeParked(tx, consumer, m);
  }

  @Override
  public Optional<QueuedMessage> claim(Connection tx, String consumer, Duration gapTimeout) throws SQLException {
    return queue.claim(tx, consumer, gapTimeout);
  }

  /** Builds a {@link MariaDbInboxStore}; {@link #build()} checks the prefix. */
  public static final class Builder {
    private String tablePrefix = MariaDbOutboxStore.DEFAULT_TABLE_PREFIX;

    private Builder() {}

    /** The prefix of every table name. Default {@value MariaDbOutboxStore#DEFAULT_TABLE_PREFIX}. */
    public Builder tablePrefix(String tablePrefix) {
      this.tablePrefix = tablePrefix;
      return this;
    }

    /** Checks the prefix and builds the store. */
    public MariaDbInboxStore build() {
      return new MariaDbInboxStore(new MariaDbTables(tablePrefix));
    }
  }
}
