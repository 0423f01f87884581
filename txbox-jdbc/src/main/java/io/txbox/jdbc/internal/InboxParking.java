package io.txbox.jdbc.internal;

import io.txbox.Message;
import io.txbox.ParkedMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * The SQL of consumer-side dead letters. Message bodies live in {@code inbox_queue} (status
 * {@code dead} or {@code parked}); {@code inbox_parked_key} has a row per parked key. Parking a
 * message takes that row {@code FOR SHARE}, freeing the key takes it {@code FOR UPDATE} before
 * looking for what is left, so a message is never parked behind a key that was just freed.
 */
public final class InboxParking {
  private static final String COLUMNS = "q.message_id, q.key, q.type, q.version, q.destination, q.payload,"
      + " q.content_type, q.headers::text, q.created_at, NULL::timestamptz,"
      + " q.queue_key, q.status, q.attempts, q.last_error, q.received_at";

  private final String isParked;
  private final String lockParked;
  private final String park;
  private final String unpark;
  private final String insertBody;
  private final String recordAs;
  private final String list;
  private final String first;
  private final String forget;
  private final String forgetRecord;
  private final String markProcessed;
  private final String bodyFailedAgain;
  private final String recordFailedAgain;
  private final String parkQueued;
  private final String requeue;
  private final String discard;
  private final String requestRetry;
  private final String takeRetryRequests;

  public InboxParking(PostgresTables tables) {
    this.isParked = tables.render("SELECT 1 FROM {inbox_parked_key} WHERE consumer = ? AND queue_key = ? FOR SHARE");
    this.lockParked = tables.render("SELECT 1 FROM {inbox_parked_key} WHERE consumer = ? AND queue_key = ? FOR UPDATE");
    this.park = tables.render("INSERT INTO {inbox_parked_key} (consumer, queue_key) VALUES (?, ?)"
        + " ON CONFLICT (consumer, queue_key) DO NOTHING");
    this.unpark = tables.render("DELETE FROM {inbox_parked_key} WHERE consumer = ? AND queue_key = ?");
    this.insertBody = tables.render("INSERT INTO {inbox_queue} (consumer, message_id, queue_key, sequence, key,"
        + " type, version, destination, payload, content_type, headers, created_at, status, attempts, last_error)"
        + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, jsonb_object(?::text[], ?::text[]), ?, ?, ?, ?)"
        + " ON CONFLICT (consumer, message_id) DO NOTHING");
    this.recordAs = tables.render("INSERT INTO {inbox} (consumer, message_id, status, attempts, last_error)"
        + " VALUES (?, ?, ?, ?, ?) ON CONFLICT (consumer, message_id) DO NOTHING");
    this.list = tables.render("SELECT " + COLUMNS + " FROM {inbox_queue} q"
        + " WHERE q.consumer = ? AND q.status IN ('dead', 'parked')"
        + " ORDER BY q.queue_key, q.sequence, q.position LIMIT ?");
    this.first = tables.render("SELECT " + COLUMNS + " FROM {inbox_queue} q"
        + " WHERE q.consumer = ? AND q.queue_key = ? AND q.status IN ('dead', 'parked')"
        + " ORDER BY q.sequence, q.position LIMIT 1");
    this.forget = tables.render("DELETE FROM {inbox_queue} WHERE consumer = ? AND message_id = ?");
    this.forgetRecord = tables.render("DELETE FROM {inbox} WHERE consumer = ? AND message_id = ?");
    this.markProcessed = tables.render("UPDATE {inbox} SET status = 'processed', processed_at = now(),"
        + " attempts = attempts + 1 WHERE consumer = ? AND message_id = ?");
    this.bodyFailedAgain = tables.render("UPDATE {inbox_queue} SET status = 'dead', attempts = attempts + 1,"
        + " last_error = ? WHERE consumer = ? AND message_id = ?");
    this.recordFailedAgain = tables.render("UPDATE {inbox} SET status = 'dead', attempts = attempts + 1,"
        + " last_error = ? WHERE consumer = ? AND message_id = ?");
    this.parkQueued = tables.render("UPDATE {inbox_queue} SET status = 'parked'"
        + " WHERE consumer = ? AND queue_key = ? AND status = 'queued'");
    this.requeue = tables.render("WITH q AS (UPDATE {inbox_queue} SET status = 'queued', attempts = 0,"
        + "  available_at = clock_timestamp()"
        + "  WHERE consumer = ? AND queue_key = ? AND status IN ('dead', 'parked') RETURNING message_id),"
        + " r AS (UPDATE {inbox} i SET status = 'queued' FROM q WHERE i.consumer = ? AND i.message_id = q.message_id)"
        + " SELECT count(*) FROM q");
    this.discard = tables.render("WITH gone AS (DELETE FROM {inbox_queue}"
        + "  WHERE consumer = ? AND queue_key = ? AND status IN ('dead', 'parked') RETURNING message_id, sequence),"
        + " r AS (UPDATE {inbox} i SET status = 'discarded' FROM gone"
        + "  WHERE i.consumer = ? AND i.message_id = gone.message_id)"
        + " SELECT count(*), max(sequence) FROM gone");
    this.requestRetry = tables.render("UPDATE {inbox_parked_key} SET retry_requested_at = now(),"
        + " retry_requested_by = ? WHERE consumer = ? AND queue_key = ?");
    // SKIP LOCKED: a key whose retry is running right now is locked by it and taken next time.
    this.takeRetryRequests = tables.render("UPDATE {inbox_parked_key} k SET retry_requested_at = NULL"
        + " FROM (SELECT queue_key FROM {inbox_parked_key} WHERE consumer = ? AND retry_requested_at IS NOT NULL"
        + "   ORDER BY retry_requested_at LIMIT ? FOR UPDATE SKIP LOCKED) AS r"
        + " WHERE k.consumer = ? AND k.queue_key = r.queue_key RETURNING k.queue_key, k.retry_requested_by");
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
    try (PreparedStatement p = tx.prepareStatement(takeRetryRequests)) {
      p.setString(1, consumer);
      p.setInt(2, limit);
      p.setString(3, consumer);
      List<String> keys = new ArrayList<>();
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          keys.add(rs.getString(1));
        }
      }
      return keys;
    }
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
      p.setObject(2, m.id());
      p.setString(3, body.status());
      p.setInt(4, body.attempts());
      p.setString(5, body.error());
      if (p.executeUpdate() == 0) {
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
      p.setObject(2, m.id());
      p.setString(3, body.queueKey());
      p.setObject(4, body.sequence());
      p.setString(5, m.key());
      p.setString(6, m.type());
      p.setInt(7, m.version());
      p.setString(8, m.destination());
      p.setBytes(9, m.payload());
      p.setString(10, m.contentType());
      p.setArray(11, tx.createArrayOf("text", m.headers().keySet().toArray()));
      p.setArray(12, tx.createArrayOf("text", m.headers().values().toArray()));
      p.setObject(13, m.createdAt().atOffset(ZoneOffset.UTC));
      p.setString(14, body.status());
      p.setInt(15, body.attempts());
      p.setString(16, body.error());
      return p.executeUpdate() == 1;
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
        p.setObject(3, messageId);
        p.executeUpdate();
      }
    }
  }

  /** Queues the key's parked messages again and frees it; how many were queued. */
  public int requeue(Connection tx, String consumer, String queueKey) throws SQLException {
    if (!exists(tx, lockParked, consumer, queueKey)) {
      return 0;
    }
    int queued;
    try (PreparedStatement p = tx.prepareStatement(requeue)) {
      p.setString(1, consumer);
      p.setString(2, queueKey);
      p.setString(3, consumer);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        queued = rs.getInt(1);
      }
    }
    update(tx, unpark, consumer, queueKey);
    return queued;
  }

  /**
   * Drops the key's parked messages and frees it.
   *
   * @return how many were dropped, and the highest sequence number among them (null when none had one)
   */
  public Discarded discard(Connection tx, String consumer, String queueKey) throws SQLException {
    exists(tx, lockParked, consumer, queueKey);
    Discarded discarded;
    try (PreparedStatement p = tx.prepareStatement(discard)) {
      p.setString(1, consumer);
      p.setString(2, queueKey);
      p.setString(3, consumer);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        long last = rs.getLong(2);
        discarded = new Discarded(rs.getInt(1), rs.wasNull() ? null : last);
      }
    }
    update(tx, unpark, consumer, queueKey);
    return discarded;
  }

  /** How a message body is stored. */
  public record Body(String queueKey, Long sequence, String status, int attempts, String error) {}

  /** What {@link #discard} dropped. */
  public record Discarded(int count, Long lastSequence) {}

  private static ParkedMessage parkedMessage(ResultSet rs) throws SQLException {
    Message message = PostgresRows.message(rs, 1);
    return new ParkedMessage(message, rs.getString(11), "dead".equals(rs.getString(12)), rs.getInt(13),
        rs.getString(14), rs.getObject(15, OffsetDateTime.class).toInstant());
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

  private static void update(Connection tx, String sql, String consumer, Object second) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(sql)) {
      p.setString(1, consumer);
      p.setObject(2, second);
      p.executeUpdate();
    }
  }
}
