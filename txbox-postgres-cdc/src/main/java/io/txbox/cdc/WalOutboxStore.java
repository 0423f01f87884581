package io.txbox.cdc;

import io.txbox.Message;
import io.txbox.spi.OutboxWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;

/**
 * The outbox's second write mode on PostgreSQL: each event is one transactional WAL message
 * ({@code pg_logical_emit_message(true, prefix, envelope)}) instead of a row. No table, no index:
 * the business transaction pays one WAL record, and the event exists only if it commits. Only a
 * {@link LogicalRelay} reads these events: this is an {@link OutboxWriter} and no relay store, so
 * no polling {@link io.txbox.Relay} can be built over it.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.create(WalOutboxStore.create());
 * try (Connection tx = dataSource.getConnection()) {
 *   tx.setAutoCommit(false);
 *   // ... business rows ...
 *   outbox.send(tx, message);
 *   tx.commit();             // the event is decoded by the relay's slot in commit order
 * }
 * }</pre>
 *
 * <p>The database needs {@code wal_level = logical}; {@link LogicalReplication#migrate()} checks it.
 */
public final class WalOutboxStore implements OutboxWriter {
  private final String messagePrefix;

  private WalOutboxStore(String messagePrefix) {
    this.messagePrefix = LogicalReplication.requireName("messagePrefix", messagePrefix);
  }

  /** A store that writes with the default prefix {@value LogicalReplication#DEFAULT_MESSAGE_PREFIX}. */
  public static WalOutboxStore create() {
    return new WalOutboxStore(LogicalReplication.DEFAULT_MESSAGE_PREFIX);
  }

  /** A store that writes WAL messages with {@code messagePrefix}, which the relay must read. */
  public static WalOutboxStore withPrefix(String messagePrefix) {
    return new WalOutboxStore(messagePrefix);
  }

  /** The prefix of this store's WAL messages. */
  public String messagePrefix() {
    return messagePrefix;
  }

  @Override
  public void append(Connection transaction, List<Message> messages) throws SQLException {
    if (messages.size() == 1) {
      try (PreparedStatement p = transaction.prepareStatement("SELECT pg_logical_emit_message(true, ?, ?)")) {
        p.setString(1, messagePrefix);
        p.setBytes(2, WalEnvelope.encode(messages.get(0)));
        p.executeQuery().close();
      }
      return;
    }
    byte[][] envelopes = messages.stream().map(WalEnvelope::encode).toArray(byte[][]::new);
    // One statement for the lot; WITH ORDINALITY keeps the WAL messages in the order sent.
    try (PreparedStatement p = transaction.prepareStatement(
        "SELECT pg_logical_emit_message(true, ?, e.envelope)"
            + " FROM unnest(?::bytea[]) WITH ORDINALITY AS e(envelope, n) ORDER BY e.n")) {
      p.setString(1, messagePrefix);
      p.setArray(2, transaction.createArrayOf("bytea", envelopes));
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          // each row is one message written
        }
      }
    }
  }
}
