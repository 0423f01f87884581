package io.txbox.mariadb.internal;

import io.txbox.Message;
import io.txbox.jdbc.spi.InboxParking;
import io.txbox.spi.QueuedMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * How {@link io.txbox.InboxQueue}'s workers claim a key on MariaDB: which key's first message may
 * be processed now (what becomes of it is {@link io.txbox.jdbc.spi.JdbcInboxStore}'s, shared).
 *
 * <p>A worker holds a key by locking the key's first message with {@code FOR UPDATE SKIP
 * LOCKED}. Only a key's first message is ever processed, so while one worker has it, every other
 * worker finds that row locked and goes on to other keys. The candidates are read without locks
 * (a consistent read, so that messages enqueued meanwhile are not held up); the lock is then taken
 * on the message's primary key, and the row it returns is the latest committed one: a message
 * processed, retried later or parked since the read is not taken.
 */
public final class MariaDbInboxQueue {
  /** Keys looked at per claim: the keys whose first message was received first. */
  private static final int CLAIM_CANDIDATES = 256;
  private static final String NOW = MariaDbSql.NOW;

  private final String candidates;
  private final String lockHead;

  public MariaDbInboxQueue(MariaDbTables tables) {
    // Each key's first queued message, whether ready or not: a first message waiting for its
    // retry or for a missing sequence number holds its key back, and the workers go on to other
    // keys. A parked key is passed over even with a message queued: one enqueued while its dead
    // message was being parked commits as queued, since parking cannot see it yet.
    this.candidates = tables.render("SELECT h.message_id, h.last_sequence FROM ("
        + " SELECT q.message_id, q.position, COALESCE(k.last_sequence, 0) AS last_sequence,"
        + "  q.available_at <= " + NOW + " AND (q.sequence IS NULL"
        + "   OR q.sequence <= COALESCE(k.last_sequence, 0) + 1"
        + "   OR q.received_at <= " + NOW + " - INTERVAL ? MICROSECOND) AS ready,"
        + "  ROW_NUMBER() OVER (PARTITION BY q.queue_key ORDER BY " + InboxParking.KEY_ORDER + ") AS n"
        + " FROM {inbox_queue} q LEFT JOIN {inbox_key} k ON k.consumer = q.consumer AND k.`key` = q.queue_key"
        + " WHERE q.consumer = ? AND q.status = 'queued' AND NOT EXISTS (SELECT 1 FROM {inbox_parked_key} pk"
        + "  WHERE pk.consumer = q.consumer AND pk.queue_key = q.queue_key)) h"
        + " WHERE h.n = 1 AND h.ready ORDER BY h.position LIMIT " + CLAIM_CANDIDATES);
    // available_at is NULL in the message: a delay was the sender's, and it is over.
    this.lockHead = tables.render("SELECT " + MariaDbDialect.INSTANCE.messageColumns("q") + ", q.queue_key, q.sequence,"
        + " q.attempts, q.status = 'queued' AND q.available_at <= " + NOW
        + " FROM {inbox_queue} q WHERE q.consumer = ? AND q.message_id = ? FOR UPDATE SKIP LOCKED");
  }

  /** The first ready message of a key no other worker holds, its key held until the transaction ends. */
  public Optional<QueuedMessage> claim(Connection tx, String consumer, Duration gapTimeout) throws SQLException {
    for (Candidate candidate : candidates(tx, consumer, gapTimeout)) {
      Optional<QueuedMessage> locked = lock(tx, consumer, candidate);
      if (locked.isPresent()) {
        return locked;
      }
    }
    return Optional.empty();
  }

  private record Candidate(String messageId, long lastSequence) {}

  private List<Candidate> candidates(Connection tx, String consumer, Duration gapTimeout) throws SQLException {
    List<Candidate> found = new ArrayList<>();
    try (PreparedStatement p = tx.prepareStatement(candidates)) {
      p.setLong(1, gapTimeout.toNanos() / 1000);
      p.setString(2, consumer);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          found.add(new Candidate(rs.getString(1), rs.getLong(2)));
        }
      }
    }
    return found;
  }

  /**
   * Locks the candidate, unless another worker holds it; empty as well when it was processed,
   * retried later or parked since the candidates were read.
   */
  private Optional<QueuedMessage> lock(Connection tx, String consumer, Candidate candidate) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(lockHead)) {
      p.setString(1, consumer);
      p.setString(2, candidate.messageId());
      try (ResultSet rs = p.executeQuery()) {
        if (!rs.next() || !rs.getBoolean(14)) {
          return Optional.empty();
        }
        Message message = MariaDbDialect.INSTANCE.message(rs, 1);
        long sequence = rs.getLong(12);
        Long seq = rs.wasNull() ? null : sequence;
        return Optional.of(new QueuedMessage(message, rs.getString(11), seq, candidate.lastSequence(), rs.getInt(13)));
      }
    }
  }
}
