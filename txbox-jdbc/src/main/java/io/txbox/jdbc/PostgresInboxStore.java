package io.txbox.jdbc;

import io.txbox.Message;
import io.txbox.jdbc.internal.PostgresRows;
import io.txbox.jdbc.internal.PostgresTables;
import io.txbox.spi.InboxQueueStore;
import io.txbox.spi.InboxStore;
import io.txbox.spi.QueuedMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Optional;
import java.util.UUID;

/**
 * The inbox on PostgreSQL: table {@code <schema>.<prefix>inbox}, created by the same migration as
 * the outbox ({@link PostgresOutboxStore#migrate()} or {@code txbox migrate}).
 *
 * <pre>{@code
 * PostgresInboxStore store = PostgresInboxStore.builder().schema("public").tablePrefix("txbox_").build();
 * Inbox inbox = Inbox.create(dataSource, store);
 * }</pre>
 *
 * <p>Recording is one {@code INSERT ... ON CONFLICT DO NOTHING} on the primary key
 * {@code (consumer, message_id)}: a conflict means a duplicate. A concurrent delivery of the same
 * message to the same consumer waits on the first one's row lock, then sees the conflict once the
 * first commits, or records the message itself if the first rolled back.
 *
 * <p>For {@link io.txbox.InboxQueue} the message body waits in {@code <prefix>inbox_queue} until
 * it is processed, and {@code <prefix>inbox_key} keeps the last sequence number per key. A worker
 * holds its key with a transaction-level advisory lock ({@code pg_try_advisory_xact_lock} on the
 * hashes of consumer and key), so workers never wait on each other: a locked key is skipped.
 */
public final class PostgresInboxStore implements InboxStore, InboxQueueStore {
  /** Keys looked at per claim: the oldest keys with messages due. */
  private static final int CLAIM_CANDIDATES = 256;
  private static final String READY = "q.available_at <= clock_timestamp() AND (q.sequence IS NULL"
      + " OR q.sequence <= coalesce(k.last_sequence, 0) + 1"
      + " OR q.received_at <= clock_timestamp() - ? * interval '1 millisecond')";

  private final String record;
  private final String enqueueRecord;
  private final String enqueueBody;
  private final String lockReadyKey;
  private final String head;
  private final String forget;
  private final String markProcessed;
  private final String moveKey;
  private final String retryLater;
  private final String markDead;
  private final String markRecordDead;

  private PostgresInboxStore(PostgresTables tables) {
    this.record = tables.render("INSERT INTO {inbox} (consumer, message_id, processed_at)"
        + " VALUES (?, ?, now()) ON CONFLICT (consumer, message_id) DO NOTHING");
    this.enqueueRecord = tables.render("INSERT INTO {inbox} (consumer, message_id, status, attempts)"
        + " VALUES (?, ?, 'queued', 0) ON CONFLICT (consumer, message_id) DO NOTHING");
    this.enqueueBody = tables.render("INSERT INTO {inbox_queue} (consumer, message_id, queue_key, sequence, key,"
        + " type, version, destination, payload, content_type, headers, created_at)"
        + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, jsonb_object(?::text[], ?::text[]), ?)"
        + " ON CONFLICT (consumer, message_id) DO NOTHING");
    // The candidates are read first (OFFSET 0 keeps them a separate step), so that the lock is
    // only tried on keys that have a message ready.
    this.lockReadyKey = tables.render("SELECT r.queue_key FROM ("
        + " SELECT h.queue_key FROM ("
        + "  SELECT queue_key FROM {inbox_queue} WHERE consumer = ? AND status = 'queued'"
        + "  AND available_at <= clock_timestamp() GROUP BY queue_key ORDER BY min(position) LIMIT "
        + CLAIM_CANDIDATES + ") c"
        + " CROSS JOIN LATERAL (SELECT q.queue_key FROM {inbox_queue} q"
        + "  LEFT JOIN {inbox_key} k ON k.consumer = q.consumer AND k.key = q.queue_key"
        + "  WHERE q.consumer = ? AND q.queue_key = c.queue_key AND q.status = 'queued' AND " + READY
        + "  ORDER BY q.sequence, q.position LIMIT 1) h"
        + " OFFSET 0) r"
        + " WHERE pg_try_advisory_xact_lock(hashtext(?), hashtext(r.queue_key)) LIMIT 1");
    // available_at is NULL in the message: a delay was the sender's, and it is over.
    this.head = tables.render("SELECT q.message_id, q.key, q.type, q.version, q.destination, q.payload,"
        + " q.content_type, q.headers::text, q.created_at, NULL::timestamptz, q.sequence, q.attempts,"
        + " coalesce(k.last_sequence, 0), " + READY
        + " FROM {inbox_queue} q LEFT JOIN {inbox_key} k ON k.consumer = q.consumer AND k.key = q.queue_key"
        + " WHERE q.consumer = ? AND q.queue_key = ? AND q.status = 'queued'"
        + " ORDER BY q.sequence, q.position LIMIT 1");
    this.forget = tables.render("DELETE FROM {inbox_queue} WHERE consumer = ? AND message_id = ?");
    this.markProcessed = tables.render("UPDATE {inbox} SET status = 'processed', processed_at = now(),"
        + " attempts = ? WHERE consumer = ? AND message_id = ?");
    this.moveKey = tables.render("INSERT INTO {inbox_key} AS k (consumer, key, last_sequence) VALUES (?, ?, ?)"
        + " ON CONFLICT (consumer, key) DO UPDATE SET last_sequence = greatest(k.last_sequence, excluded.last_sequence)");
    this.retryLater = tables.render("UPDATE {inbox_queue} SET attempts = attempts + 1, available_at = ?,"
        + " last_error = ? WHERE consumer = ? AND message_id = ?");
    this.markDead = tables.render("UPDATE {inbox_queue} SET status = 'dead', attempts = attempts + 1,"
        + " last_error = ? WHERE consumer = ? AND message_id = ?");
    this.markRecordDead = tables.render("UPDATE {inbox} SET status = 'dead', attempts = ?, last_error = ?"
        + " WHERE consumer = ? AND message_id = ?");
  }

  /** A builder with the defaults of {@link PostgresOutboxStore}: schema {@code public}, prefix {@code txbox_}. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public boolean record(Connection transaction, String consumer, UUID messageId) throws SQLException {
    return record(transaction, record, consumer, messageId);
  }

  @Override
  public boolean enqueue(Connection tx, String consumer, Message m, String queueKey, Long sequence)
      throws SQLException {
    if (!record(tx, enqueueRecord, consumer, m.id())) {
      return false;
    }
    try (PreparedStatement p = tx.prepareStatement(enqueueBody)) {
      p.setString(1, consumer);
      p.setObject(2, m.id());
      p.setString(3, queueKey);
      p.setObject(4, sequence);
      p.setString(5, m.key());
      p.setString(6, m.type());
      p.setInt(7, m.version());
      p.setString(8, m.destination());
      p.setBytes(9, m.payload());
      p.setString(10, m.contentType());
      p.setArray(11, tx.createArrayOf("text", m.headers().keySet().toArray()));
      p.setArray(12, tx.createArrayOf("text", m.headers().values().toArray()));
      p.setObject(13, m.createdAt().atOffset(ZoneOffset.UTC));
      p.executeUpdate();
    }
    return true;
  }

  @Override
  public Optional<QueuedMessage> claim(Connection tx, String consumer, Duration gapTimeout) throws SQLException {
    String key;
    try (PreparedStatement p = tx.prepareStatement(lockReadyKey)) {
      p.setString(1, consumer);
      p.setString(2, consumer);
      p.setLong(3, gapTimeout.toMillis());
      p.setString(4, consumer);
      try (ResultSet rs = p.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        key = rs.getString(1);
      }
    }
    // Read again now that the key is locked: another worker may have finished its head meanwhile.
    try (PreparedStatement p = tx.prepareStatement(head)) {
      p.setLong(1, gapTimeout.toMillis());
      p.setString(2, consumer);
      p.setString(3, key);
      try (ResultSet rs = p.executeQuery()) {
        if (!rs.next() || !rs.getBoolean(14)) {
          return Optional.empty();
        }
        return Optional.of(queuedMessage(rs, key));
      }
    }
  }

  @Override
  public void complete(Connection tx, String consumer, QueuedMessage m) throws SQLException {
    update(tx, forget, consumer, m.message().id());
    try (PreparedStatement p = tx.prepareStatement(markProcessed)) {
      p.setInt(1, m.failedAttempts() + 1);
      p.setString(2, consumer);
      p.setObject(3, m.message().id());
      p.executeUpdate();
    }
    moveKey(tx, consumer, m);
  }

  @Override
  public void retryLater(Connection tx, String consumer, QueuedMessage m, Instant retryAt, String error)
      throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(retryLater)) {
      p.setObject(1, retryAt.atOffset(ZoneOffset.UTC));
      p.setString(2, error);
      p.setString(3, consumer);
      p.setObject(4, m.message().id());
      p.executeUpdate();
    }
  }

  @Override
  public void deadLetter(Connection tx, String consumer, QueuedMessage m, String error) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(markDead)) {
      p.setString(1, error);
      p.setString(2, consumer);
      p.setObject(3, m.message().id());
      p.executeUpdate();
    }
    try (PreparedStatement p = tx.prepareStatement(markRecordDead)) {
      p.setInt(1, m.failedAttempts() + 1);
      p.setString(2, error);
      p.setString(3, consumer);
      p.setObject(4, m.message().id());
      p.executeUpdate();
    }
    moveKey(tx, consumer, m);
  }

  private void moveKey(Connection tx, String consumer, QueuedMessage m) throws SQLException {
    if (m.sequence() == null) {
      return;
    }
    try (PreparedStatement p = tx.prepareStatement(moveKey)) {
      p.setString(1, consumer);
      p.setString(2, m.queueKey());
      p.setLong(3, m.sequence());
      p.executeUpdate();
    }
  }

  private static QueuedMessage queuedMessage(ResultSet rs, String queueKey) throws SQLException {
    Message message = PostgresRows.message(rs, 1);
    long sequence = rs.getLong(11);
    Long seq = rs.wasNull() ? null : sequence;
    return new QueuedMessage(message, queueKey, seq, rs.getLong(13), rs.getInt(12));
  }

  private static boolean record(Connection tx, String sql, String consumer, UUID messageId) throws SQLException {
    return update(tx, sql, consumer, messageId) == 1;
  }

  private static int update(Connection tx, String sql, String consumer, UUID messageId) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(sql)) {
      p.setString(1, consumer);
      p.setObject(2, messageId);
      return p.executeUpdate();
    }
  }

  /** Builds a {@link PostgresInboxStore}; {@link #build()} checks the names. */
  public static final class Builder {
    private String schema = PostgresOutboxStore.DEFAULT_SCHEMA;
    private String tablePrefix = PostgresOutboxStore.DEFAULT_TABLE_PREFIX;

    private Builder() {}

    /** The schema of the tables. Default {@value PostgresOutboxStore#DEFAULT_SCHEMA}. */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The prefix of every table name. Default {@value PostgresOutboxStore#DEFAULT_TABLE_PREFIX}. */
    public Builder tablePrefix(String tablePrefix) {
      this.tablePrefix = tablePrefix;
      return this;
    }

    /** Checks the names and builds the store. */
    public PostgresInboxStore build() {
      return new PostgresInboxStore(new PostgresTables(schema, tablePrefix));
    }
  }
}
