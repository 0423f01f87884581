package io.txbox.jdbc.spi;

import io.txbox.Message;
import io.txbox.ParkedMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * The SQL of consumer-side dead letters, one text for every database. Message bodies live in
 * {@code inbox_queue} (status {@code dead} or {@code parked}); {@code inbox_parked_key} has a row
 * per parked key. Parking a message reads that row under a share lock, freeing the key locks it
 * for update before looking for what is left, so a message is never parked behind a key that was
 * just freed.
 *
 * <p>Under InnoDB's default {@code REPEATABLE READ}, the share lock on a key that is not parked
 * also locks the gap where its row would go, so a message being parked at that moment waits for
 * the admitting transaction; PostgreSQL takes no such lock and lets that race go, which the inbox
 * stores allow for.
 *
 * <pre>{@code
 * InboxParking parking = new InboxParking(tables, dialect);
 * if (parking.isParked(tx, "billing", "order-7")) { ... }
 * }</pre>
 */
public final class InboxParking {
  /** A key's order of messages: by sequence number, those without one last, then as received. */
  public static final String KEY_ORDER = "q.sequence IS NULL, q.sequence, q.position";
  private static final String PARKED = "q.status IN ('dead', 'parked')";

  private final SqlDialect dialect;
  private final String isParked;
  private final String lockParked;
  private final String park;
  private final String unpark;
  private final String insertBody;
  private final String recordAs;
  private final String list;
  private final String first;
  private final String parkedOfKey;
  private final String forget;
  private final String forgetRecord;
  private final String markProcessed;
  private final String bodyFailedAgain;
  private final String recordFailedAgain;
  private final String parkQueued;
  private final String setRecordStatus;
  private final String requeueBodies;
  private final String discardBodies;
  private final String requestRetry;
  private final String retryRequests;
  private final String clearRetryRequest;

  public InboxParking(TableNames tables, SqlDialect dialect) {
    this.dialect = dialect;
    String columns = dialect.messageColumns("q") + ", q.queue_key, q.status, q.attempts, q.last_error, q.received_at";
    String ofKey = " WHERE q.consumer = ? AND q.queue_key = ? AND " + PARKED;
    this.isParked = tables.render("SELECT 1 FROM {inbox_parked_key} WHERE consumer = ? AND queue_key = ? "
        + dialect.shareLock());
    this.lockParked = tables.render("SELECT 1 FROM {inbox_parked_key} WHERE consumer = ? AND queue_key = ? FOR UPDATE");
    this.park = tables.render("INSERT INTO {inbox_parked_key} (consumer, queue_key) VALUES (?, ?)"
        + dialect.ignoreDuplicateOf("consumer, queue_key"));
    this.unpark = tables.render("DELETE FROM {inbox_parked_key} WHERE consumer = ? AND queue_key = ?");
    this.insertBody = tables.render("INSERT INTO {inbox_queue} (consumer, message_id, queue_key, sequence, "
        + dialect.identifier("key") + ", type, version, destination, payload, content_type, headers, created_at,"
        + " status, attempts, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " + dialect.jsonParameter()
        + ", ?, ?, ?, ?)" + dialect.ignoreDuplicateOf("consumer, message_id"));
    this.recordAs = tables.render("INSERT INTO {inbox} (consumer, message_id, status, attempts, last_error)"
        + " VALUES (?, ?, ?, ?, ?)" + dialect.ignoreDuplicateOf("consumer, message_id"));
    this.list = tables.render("SELECT " + columns + " FROM {inbox_queue} q WHERE q.consumer = ? AND " + PARKED
        + " ORDER BY q.queue_key, " + KEY_ORDER + " LIMIT ?");
    this.first = tables.render("SELECT " + columns + " FROM {inbox_queue} q" + ofKey
        + " ORDER BY " + KEY_ORDER + " LIMIT 1");
    this.parkedOfKey = tables.render("SELECT q.message_id, q.sequence FROM {inbox_queue} q" + ofKey + " FOR UPDATE");
    this.forget = tables.render("DELETE FROM {inbox_queue} WHERE consumer = ? AND message_id = ?");
    this.forgetRecord = tables.render("DELETE FROM {inbox} WHERE consumer = ? AND message_id = ?");
    this.markProcessed = tables.render("UPDATE {inbox} SET status = 'processed', processed_at = " + dialect.now()
        + ", attempts = attempts + 1 WHERE consumer = ? AND message_id = ?");
    this.bodyFailedAgain = tables.render("UPDATE {inbox_queue} SET status = 'dead', attempts = attempts + 1,"
        + " last_error = ? WHERE consumer = ? AND message_id = ?");
    this.recordFailedAgain = tables.render("UPDATE {inbox} SET status = 'dead', attempts = attempts + 1,"
        + " last_error = ? WHERE consumer = ? AND message_id = ?");
    this.parkQueued = tables.render("UPDATE {inbox_queue} SET status = 'parked'"
        + " WHERE consumer = ? AND queue_key = ? AND status = 'queued'");
    this.setRecordStatus = tables.render("UPDATE {inbox} SET status = ? WHERE consumer = ? AND message_id = ?");
    this.requeueBodies = tables.render("UPDATE {inbox_queue} SET status = 'queued', attempts = 0, available_at = "
        + dialect.now() + " WHERE consumer = ? AND message_id = ?");
    this.discardBodies = tables.render("DELETE FROM {inbox_queue} WHERE consumer = ? AND message_id = ?");
    this.requestRetry = tables.render("UPDATE {inbox_parked_key} SET retry_requested_at = " + dialect.now() + ","
        + " retry_requested_by = ? WHERE consumer = ? AND queue_key = ?");
    // SKIP LOCKED: a key whose retry is running right now is locked by it and taken next time.
    this.retryRequests = tables.render("SELECT queue_key FROM {inbox_parked_key}"
        + " WHERE consumer = ? AND retry_requested_at IS NOT NULL ORDER BY retry_requested_at LIMIT ?"
        + " FOR UPDATE SKIP LOCKED");
    this.clearRetryRequest = tables.render("UPDATE {inbox_parked_key} SET retry_requested_at = NULL"
        + " WHERE consumer = ? AND queue_key = ?");
  }

  /** Asks the running consumer to retry {@code queueKey}; false when the key is not parked. */
  public boolean requestRetry(Connection tx, String consumer, String queueKey, String operator) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(requestRetry)) {
      p.setString(1, operator);
      p.setString(2, consumer);
      p.setString(3, queueKey);
      return p.executeUpdate() == 1;
    }
  }

  /** Takes up to {@code limit} retry requests: each is cleared here and returned once. */
  public List<String> takeRetryRequests(Connection tx, String consumer, int limit) throws SQLException {
    List<String> keys = new ArrayList<>();
    try (PreparedStatement p = tx.prepareStatement(retryRequests)) {
      p.setString(1, consumer);
      p.setInt(2, limit);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          keys.add(rs.getString(1));
        }
      }
    }
    for (String key : keys) {
      update(tx, clearRetryRequest, consumer, key);
    }
    return keys;
  }

  /** Whether {@code queueKey} is parked; if so, it stays parked until this transaction ends. */
  public boolean isParked(Connection tx, String consumer, String queueKey) throws SQLException {
    return exists(tx, isParked, consumer, queueKey);
  }

  /**
   * Records {@code m} with {@code status} and stores its body beside it.
   *
   * @return false when the consumer had it already; nothing was stored
   */
  public boolean store(Connection tx, String consumer, Message m, Body body) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(recordAs)) {
      p.setString(1, consumer);
      dialect.setUuid(p, 2, m.id());
      p.setString(3, body.status());
      p.setInt(4, body.attempts());
      p.setString(5, body.error());
      if (!dialect.insertedNew(p)) {
        return false;
      }
    }
    if (!storeBody(tx, consumer, m, body)) {
      // Its body is kept already (a dead message whose record is gone): a new record would point
      // at nothing that is ever processed, so the message is a duplicate of the one kept.
      update(tx, forgetRecord, consumer, m.id());
      return false;
    }
    return true;
  }

  private boolean storeBody(Connection tx, String consumer, Message m, Body body) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(insertBody)) {
      p.setString(1, consumer);
      dialect.setUuid(p, 2, m.id());
      p.setString(3, body.queueKey());
      p.setObject(4, body.sequence());
      p.setString(5, m.key());
      p.setString(6, m.type());
      p.setInt(7, m.version());
      p.setString(8, m.destination());
      p.setBytes(9, m.payload());
      p.setString(10, m.contentType());
      p.setString(11, JsonHeaders.write(m.headers()));
      dialect.setInstant(p, 12, m.createdAt());
      p.setString(13, body.status());
      p.setInt(14, body.attempts());
      p.setString(15, body.error());
      return dialect.insertedNew(p);
    }
  }

  /** Parks {@code queueKey}, and the key's queued messages behind whatever made it park. */
  public void park(Connection tx, String consumer, String queueKey) throws SQLException {
    update(tx, park, consumer, queueKey);
    update(tx, parkQueued, consumer, queueKey);
  }

  public List<ParkedMessage> list(Connection tx, String consumer, int limit) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(list)) {
      p.setString(1, consumer);
      p.setInt(2, limit);
      try (ResultSet rs = p.executeQuery()) {
        List<ParkedMessage> parked = new ArrayList<>();
        while (rs.next()) {
          parked.add(parkedMessage(rs));
        }
        return parked;
      }
    }
  }

  /** Locks the parked key, returns its first message, or frees the key when none is left. */
  public Optional<ParkedMessage> next(Connection tx, String consumer, String queueKey) throws SQLException {
    if (!exists(tx, lockParked, consumer, queueKey)) {
      return Optional.empty();
    }
    try (PreparedStatement p = tx.prepareStatement(first)) {
      p.setString(1, consumer);
      p.setString(2, queueKey);
      try (ResultSet rs = p.executeQuery()) {
        if (rs.next()) {
          return Optional.of(parkedMessage(rs));
        }
      }
    }
    update(tx, unpark, consumer, queueKey);
    return Optional.empty();
  }

  public void processed(Connection tx, String consumer, UUID messageId) throws SQLException {
    update(tx, forget, consumer, messageId);
    update(tx, markProcessed, consumer, messageId);
  }

  public void failedAgain(Connection tx, String consumer, UUID messageId, String error) throws SQLException {
    for (String sql : List.of(bodyFailedAgain, recordFailedAgain)) {
      try (PreparedStatement p = tx.prepareStatement(sql)) {
        p.setString(1, error);
        p.setString(2, consumer);
        dialect.setUuid(p, 3, messageId);
        p.executeUpdate();
      }
    }
  }

  /** Queues the key's parked messages again and frees it; how many were queued. */
  public int requeue(Connection tx, String consumer, String queueKey) throws SQLException {
    if (!exists(tx, lockParked, consumer, queueKey)) {
      return 0;
    }
    List<UUID> ids = new ArrayList<>();
    parkedOfKey(tx, consumer, queueKey, ids);
    setRecordStatus(tx, consumer, ids, "queued");
    forEachId(tx, requeueBodies, consumer, ids);
    update(tx, unpark, consumer, queueKey);
    return ids.size();
  }

  /**
   * Drops the key's parked messages and frees it.
   *
   * @return how many were dropped, and the highest sequence number among them (null when none had one)
   */
  public Discarded discard(Connection tx, String consumer, String queueKey) throws SQLException {
    exists(tx, lockParked, consumer, queueKey);
    List<UUID> ids = new ArrayList<>();
    Long lastSequence = parkedOfKey(tx, consumer, queueKey, ids);
    setRecordStatus(tx, consumer, ids, "discarded");
    forEachId(tx, discardBodies, consumer, ids);
    update(tx, unpark, consumer, queueKey);
    return new Discarded(ids.size(), lastSequence);
  }

  /** How a message body is stored. */
  public record Body(String queueKey, Long sequence, String status, int attempts, String error) {}

  /** What {@link #discard} dropped. */
  public record Discarded(int count, Long lastSequence) {}

  /**
   * Locks the key's parked bodies, adds their ids to {@code ids}; the highest sequence number
   * among them, or null. Ids first, then bodies and records by id: the same statements on every
   * database (an update joined to another table is written three ways), and exactly the messages
   * locked are requeued or dropped, whatever else changes meanwhile.
   */
  private Long parkedOfKey(Connection tx, String consumer, String queueKey, List<UUID> ids) throws SQLException {
    Long last = null;
    try (PreparedStatement p = tx.prepareStatement(parkedOfKey)) {
      p.setString(1, consumer);
      p.setString(2, queueKey);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          ids.add(dialect.getUuid(rs, 1));
          long sequence = rs.getLong(2);
          if (!rs.wasNull() && (last == null || sequence > last)) {
            last = sequence;
          }
        }
      }
    }
    return last;
  }

  private void setRecordStatus(Connection tx, String consumer, List<UUID> ids, String status) throws SQLException {
    if (ids.isEmpty()) {
      return;
    }
    try (PreparedStatement p = tx.prepareStatement(setRecordStatus)) {
      for (UUID id : ids) {
        p.setString(1, status);
        p.setString(2, consumer);
        dialect.setUuid(p, 3, id);
        p.addBatch();
      }
      p.executeBatch();
    }
  }

  private void forEachId(Connection tx, String sql, String consumer, List<UUID> ids) throws SQLException {
    if (ids.isEmpty()) {
      return;
    }
    try (PreparedStatement p = tx.prepareStatement(sql)) {
      for (UUID id : ids) {
        p.setString(1, consumer);
        dialect.setUuid(p, 2, id);
        p.addBatch();
      }
      p.executeBatch();
    }
  }

  private ParkedMessage parkedMessage(ResultSet rs) throws SQLException {
    Message message = dialect.message(rs, 1);
    return new ParkedMessage(message, rs.getString(11), "dead".equals(rs.getString(12)), rs.getInt(13),
        rs.getString(14), dialect.getInstant(rs, 15));
  }

  private static boolean exists(Connection tx, String sql, String consumer, String queueKey) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(sql)) {
      p.setString(1, consumer);
      p.setString(2, queueKey);
      try (ResultSet rs = p.executeQuery()) {
        return rs.next();
      }
    }
  }

  private static void update(Connection tx, String sql, String consumer, String queueKey) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(sql)) {
      p.setString(1, consumer);
      p.setString(2, queueKey);
      p.executeUpdate();
    }
  }

  private void update(Connection tx, String sql, String consumer, UUID messageId) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(sql)) {
      p.setString(1, consumer);
      dialect.setUuid(p, 2, messageId);
      p.executeUpdate();
    }
  }
}
