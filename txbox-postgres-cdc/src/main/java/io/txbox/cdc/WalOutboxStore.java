package io.txbox.cdc;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.TxboxException;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.Membership;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.StoredMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;

/**
 * The outbox's second write mode on PostgreSQL: each event is one transactional WAL message
 * ({@code pg_logical_emit_message(true, prefix, envelope)}) instead of a row. No table, no index:
 * the business transaction pays one WAL record, and the event exists only if it commits. Only a
 * {@link LogicalRelay} reads these events; a polling {@link io.txbox.Relay} over this store stops at
 * start with an error that says so.
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
public final class WalOutboxStore implements OutboxStore {
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

  @Override
  public int openSubscription(String subscription) {
    throw pollingRelay();
  }

  @Override
  public Membership heartbeat(String subscription, String instance, Duration lease) {
    throw pollingRelay();
  }

  @Override
  public List<BucketState> claimBuckets(String subscription, String instance, int max, Duration lease) {
    throw pollingRelay();
  }

  @Override
  public void releaseBuckets(String subscription, String instance, Collection<Integer> buckets) {
    throw pollingRelay();
  }

  @Override
  public void leave(String subscription, String instance) {
    throw pollingRelay();
  }

  @Override
  public List<StoredMessage> read(String subscription, List<BucketRead> reads) {
    throw pollingRelay();
  }

  @Override
  public Set<Integer> saveProgress(
      String subscription, String instance, List<BucketProgress> progress, List<DeadLetter> deadLetters) {
    throw pollingRelay();
  }

  private static TxboxException pollingRelay() {
    return new TxboxException("this outbox writes its events as WAL messages, which no table holds:"
        + " relay them with io.txbox.cdc.LogicalRelay (txbox relay --source logical), or build the"
        + " outbox over PostgresOutboxStore to relay by polling");
  }
}
