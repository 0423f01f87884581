package io.txbox.jdbc.spi;

import io.txbox.Message;
import io.txbox.ParkedMessage;
import io.txbox.jdbc.spi.InboxParking.Body;
import io.txbox.spi.InboxQueueStore;
import io.txbox.spi.InboxStore;
import io.txbox.spi.QueuedMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * The inbox and inbox queue in one SQL text for every database: dead letters, parked keys,
 * operator retries and what becomes of a claimed message. A database's store adds what must be
 * its own for speed or for its locks: how a message is recorded and admitted, and how a worker
 * claims a key.
 *
 * <pre>{@code
 * public final class MyDbInboxStore extends JdbcInboxStore {
 *   MyDbInboxStore(TableNames tables) {
 *     super(tables, MyDbDialect.INSTANCE, tables.render("INSERT INTO {inbox_key} ... keep the greater"));
 *   }
 *   // record, admit, admitAll, claim
 * }
 * }</pre>
 */
public abstract class JdbcInboxStore implements InboxStore, InboxQueueStore {
  protected final SqlDialect dialect;
  protected final InboxParking parking;
  private final String moveKey;
  private final String forget;
  private final String markProcessed;
  private final String retryLater;
  private final String markDead;
  private final String markRecordDead;

  /**
   * @param moveKey the upsert of {@code (consumer, key, last_sequence)} into {@code inbox_key}
   *     that keeps the greater of the stored and the given sequence number: a key never moves back
   */
  protected JdbcInboxStore(TableNames tables, SqlDialect dialect, String moveKey) {
    this.dialect = dialect;
    this.parking = new InboxParking(tables, dialect);
    this.moveKey = moveKey;
    this.forget = tables.render("DELETE FROM {inbox_queue} WHERE consumer = ? AND message_id = ?");
    this.markProcessed = tables.render("UPDATE {inbox} SET status = 'processed', processed_at = " + dialect.now()
        + ", attempts = ? WHERE consumer = ? AND message_id = ?");
    this.retryLater = tables.render("UPDATE {inbox_queue} SET attempts = attempts + 1, available_at = ?,"
        + " last_error = ? WHERE consumer = ? AND message_id = ?");
    this.markDead = tables.render("UPDATE {inbox_queue} SET status = 'dead', attempts = attempts + 1,"
        + " last_error = ? WHERE consumer = ? AND message_id = ?");
    this.markRecordDead = tables.render("UPDATE {inbox} SET status = 'dead', attempts = ?, last_error = ?"
        + " WHERE consumer = ? AND message_id = ?");
  }

  /** Stores {@code m} behind its key's dead message when the key is parked; else it was a duplicate. */
  protected final Admission duplicateOrParked(Connection tx, String consumer, Message m) throws SQLException {
    String queueKey = InboxStore.queueKey(m);
    if (!parking.isParked(tx, consumer, queueKey)) {
      return Admission.DUPLICATE;
    }
    return storeParked(tx, consumer, m);
  }

  /** Stores {@code m} behind its parked key's dead message: PARKED, or DUPLICATE when kept already. */
  protected final Admission storeParked(Connection tx, String consumer, Message m) throws SQLException {
    return parking.store(tx, consumer, m, new Body(InboxStore.queueKey(m), null, "parked", 0, null))
        ? Admission.PARKED : Admission.DUPLICATE;
  }

  @Override
  public final boolean deadLetter(Connection tx, String consumer, Message m, int attempts, String error)
      throws SQLException {
    String queueKey = InboxStore.queueKey(m);
    if (!parking.store(tx, consumer, m, new Body(queueKey, null, "dead", attempts, error))) {
      return false;
    }
    parking.park(tx, consumer, queueKey);
    return true;
  }

  @Override
  public final List<ParkedMessage> parked(Connection tx, String consumer, int limit) throws SQLException {
    return parking.list(tx, consumer, limit);
  }

  @Override
  public final Optional<ParkedMessage> nextParked(Connection tx, String consumer, String queueKey)
      throws SQLException {
    return parking.next(tx, consumer, queueKey);
  }

  @Override
  public final void processedParked(Connection tx, String consumer, UUID messageId) throws SQLException {
    parking.processed(tx, consumer, messageId);
  }

  @Override
  public final void failedParked(Connection tx, String consumer, UUID messageId, String error) throws SQLException {
    parking.failedAgain(tx, consumer, messageId, error);
  }

  @Override
  public final int discardParked(Connection tx, String consumer, String queueKey) throws SQLException {
    InboxParking.Discarded discarded = parking.discard(tx, consumer, queueKey);
    if (discarded.lastSequence() != null) {
      moveKey(tx, consumer, queueKey, discarded.lastSequence());
    }
    return discarded.count();
  }

  @Override
  public final int requeueParked(Connection tx, String consumer, String queueKey) throws SQLException {
    return parking.requeue(tx, consumer, queueKey);
  }

  @Override
  public final boolean requestRetry(Connection tx, String consumer, String queueKey, String operator)
      throws SQLException {
    return parking.requestRetry(tx, consumer, queueKey, operator);
  }

  @Override
  public final List<String> takeRetryRequests(Connection tx, String consumer, int limit) throws SQLException {
    return parking.takeRetryRequests(tx, consumer, limit);
  }

  @Override
  public final Admission enqueue(Connection tx, String consumer, Message m, String queueKey, Long sequence)
      throws SQLException {
    boolean parked = parking.isParked(tx, consumer, queueKey);
    Body body = new Body(queueKey, sequence, parked ? "parked" : "queued", 0, null);
    if (!parking.store(tx, consumer, m, body)) {
      return Admission.DUPLICATE;
    }
    return parked ? Admission.PARKED : Admission.NEW;
  }

  @Override
  public final void complete(Connection tx, String consumer, QueuedMessage m) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(forget)) {
      p.setString(1, consumer);
      dialect.setUuid(p, 2, m.message().id());
      p.executeUpdate();
    }
    try (PreparedStatement p = tx.prepareStatement(markProcessed)) {
      p.setInt(1, m.failedAttempts() + 1);
      p.setString(2, consumer);
      dialect.setUuid(p, 3, m.message().id());
      p.executeUpdate();
    }
    if (m.sequence() != null) {
      moveKey(tx, consumer, m.queueKey(), m.sequence());
    }
  }

  @Override
  public final void retryLater(Connection tx, String consumer, QueuedMessage m, Instant retryAt, String error)
      throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(retryLater)) {
      dialect.setInstant(p, 1, retryAt);
      p.setString(2, error);
      p.setString(3, consumer);
      dialect.setUuid(p, 4, m.message().id());
      p.executeUpdate();
    }
  }

  @Override
  public final void deadLetter(Connection tx, String consumer, QueuedMessage m, String error) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(markDead)) {
      p.setString(1, error);
      p.setString(2, consumer);
      dialect.setUuid(p, 3, m.message().id());
      p.executeUpdate();
    }
    try (PreparedStatement p = tx.prepareStatement(markRecordDead)) {
      p.setInt(1, m.failedAttempts() + 1);
      p.setString(2, error);
      p.setString(3, consumer);
      dialect.setUuid(p, 4, m.message().id());
      p.executeUpdate();
    }
    parking.park(tx, consumer, m.queueKey());
  }

  private void moveKey(Connection tx, String consumer, String queueKey, long sequence) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(moveKey)) {
      p.setString(1, consumer);
      p.setString(2, queueKey);
      p.setLong(3, sequence);
      p.executeUpdate();
    }
  }
}
