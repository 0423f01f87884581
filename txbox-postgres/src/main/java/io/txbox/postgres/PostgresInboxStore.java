package io.txbox.postgres;

import io.txbox.Message;
import io.txbox.jdbc.spi.JdbcInboxStore;
import io.txbox.postgres.internal.PostgresDialect;
import io.txbox.spi.InboxStore;
import io.txbox.spi.QueuedMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
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
public final class PostgresInboxStore extends JdbcInboxStore {
  /** Keys looked at per claim: the oldest keys with messages due. */
  private static final int CLAIM_CANDIDATES = 256;
  private static final String READY = "q.available_at <= clock_timestamp() AND (q.sequence IS NULL"
      + " OR q.sequence <= coalesce(k.last_sequence, 0) + 1"
      + " OR q.received_at <= clock_timestamp() - ? * interval '1 millisecond')";

  private final String record;
  private final String recordUnlessParked;
  private final String recordAllUnlessParked;
  private final String lockReadyKey;
  private final String head;
  private final PostgresTables tables;

  private PostgresInboxStore(PostgresTables tables) {
    super(tables, PostgresDialect.INSTANCE, tables.render("INSERT INTO {inbox_key} AS k (consumer, key, last_sequence)"
        + " VALUES (?, ?, ?) ON CONFLICT (consumer, key)"
        + " DO UPDATE SET last_sequence = greatest(k.last_sequence, excluded.last_sequence)"));
    this.tables = tables;
    this.record = tables.render("INSERT INTO {inbox} (consumer, message_id, processed_at)"
        + " VALUES (?, ?, now()) ON CONFLICT (consumer, message_id) DO NOTHING");
    // One statement on the usual path: recorded unless the key is parked. Taking the parked key
    // FOR SHARE makes a retry that frees it wait until this message is recorded or parked.
    this.recordUnlessParked = tables.render("WITH parked AS (SELECT 1 FROM {inbox_parked_key}"
        + " WHERE consumer = ? AND queue_key = ? FOR SHARE)"
        + " INSERT INTO {inbox} (consumer, message_id, processed_at) SELECT ?, ?, now()"
        + " WHERE NOT EXISTS (SELECT 1 FROM parked) ON CONFLICT (consumer, message_id) DO NOTHING");
    // The same for a batch, in one statement: what it returns is new; the rest is a duplicate or
    // parked, told apart one by one (the rare case). Inserted in id order, so two batches sharing
    // ids (redeliveries to two instances) lock them in the same order and cannot deadlock.
    this.recordAllUnlessParked = tables.render("WITH m AS (SELECT * FROM unnest(?::uuid[], ?::text[])"
        + " AS m(message_id, queue_key)),"
        + " parked AS (SELECT queue_key FROM {inbox_parked_key}"
        + " WHERE consumer = ? AND queue_key IN (SELECT queue_key FROM m) FOR SHARE)"
        + " INSERT INTO {inbox} (consumer, message_id, processed_at)"
        + " SELECT ?, m.message_id, now() FROM m WHERE m.queue_key NOT IN (SELECT queue_key FROM parked)"
        + " ORDER BY m.message_id ON CONFLICT (consumer, message_id) DO NOTHING RETURNING message_id");
    // The candidates are read first (OFFSET 0 keeps them a separate step), so that the lock is
    // only tried on keys whose head is ready. The head is each key's first queued message whether
    // ready or not: a head waiting for its retry or for a missing sequence number holds its key
    // back, and the workers go on to other keys instead of finding nothing.
    // A parked key is passed over even with a message queued: one enqueued while its dead message
    // was being parked commits as queued, since parking cannot see it yet; it waits for the retry.
    this.lockReadyKey = tables.render("SELECT r.queue_key FROM ("
        + " SELECT h.queue_key FROM ("
        + "  SELECT q0.queue_key FROM {inbox_queue} q0 WHERE q0.consumer = ? AND q0.status = 'queued'"
        + "  AND q0.available_at <= clock_timestamp() AND NOT EXISTS (SELECT 1 FROM {inbox_parked_key} pk"
        + "   WHERE pk.consumer = q0.consumer AND pk.queue_key = q0.queue_key)"
        + "  GROUP BY q0.queue_key ORDER BY min(q0.position) LIMIT " + CLAIM_CANDIDATES + ") c"
        + " CROSS JOIN LATERAL (SELECT q.queue_key, " + READY + " AS ready FROM {inbox_queue} q"
        + "  LEFT JOIN {inbox_key} k ON k.consumer = q.consumer AND k.key = q.queue_key"
        + "  WHERE q.consumer = ? AND q.queue_key = c.queue_key AND q.status = 'queued'"
        + "  ORDER BY q.sequence, q.position LIMIT 1) h"
        + " WHERE h.ready OFFSET 0) r"
        + " WHERE pg_try_advisory_xact_lock(hashtext(?), hashtext(r.queue_key)) LIMIT 1");
    // available_at is NULL in the message: a delay was the sender's, and it is over.
    this.head = tables.render("SELECT q.message_id, q.key, q.type, q.version, q.destination, q.payload,"
        + " q.content_type, q.headers::text, q.created_at, NULL::timestamptz, q.sequence, q.attempts,"
        + " coalesce(k.last_sequence, 0), " + READY
        + " FROM {inbox_queue} q LEFT JOIN {inbox_key} k ON k.consumer = q.consumer AND k.key = q.queue_key"
        + " WHERE q.consumer = ? AND q.queue_key = ? AND q.status = 'queued'"
        + " ORDER BY q.sequence, q.position LIMIT 1");
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
  public Admission admit(Connection tx, String consumer, Message m) throws SQLException {
    String queueKey = InboxStore.queueKey(m);
    try (PreparedStatement p = tx.prepareStatement(recordUnlessParked)) {
      p.setString(1, consumer);
      p.setString(2, queueKey);
      p.setString(3, consumer);
      p.setObject(4, m.id());
      if (p.executeUpdate() == 1) {
        return Admission.NEW;
      }
    } catch (SQLException e) {
      throw tables.explainMissing(e); // the first statement a consumer-only service runs
    }
    return duplicateOrParked(tx, consumer, m);
  }

  @Override
  public List<Admission> admitAll(Connection tx, String consumer, List<Message> messages) throws SQLException {
    Set<UUID> recorded = recordAll(tx, consumer, messages);
    List<Admission> admissions = new ArrayList<>(messages.size());
    for (Message m : messages) {
      // removed once seen: the same message twice in a batch is new only the first time
      admissions.add(recorded.remove(m.id()) ? Admission.NEW : duplicateOrParked(tx, consumer, m));
    }
    return admissions;
  }

  private Set<UUID> recordAll(Connection tx, String consumer, List<Message> messages) throws SQLException {
    UUID[] ids = new UUID[messages.size()];
    String[] queueKeys = new String[messages.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = messages.get(i).id();
      queueKeys[i] = InboxStore.queueKey(messages.get(i));
    }
    Set<UUID> recorded = new HashSet<>();
    try (PreparedStatement p = tx.prepareStatement(recordAllUnlessParked)) {
      p.setArray(1, tx.createArrayOf("uuid", ids));
      p.setArray(2, tx.createArrayOf("text", queueKeys));
      p.setString(3, consumer);
      p.setString(4, consumer);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          recorded.add(rs.getObject(1, UUID.class));
        }
      }
    } catch (SQLException e) {
      throw tables.explainMissing(e);
    }
    return recorded;
  }

  @Override
  public Optional<QueuedMessage> claim(Connection tx, String consumer, Duration gapTimeout) throws SQLException {
    String key;
    try (PreparedStatement p = tx.prepareStatement(lockReadyKey)) {
      p.setString(1, consumer);
      p.setLong(2, gapTimeout.toMillis());
      p.setString(3, consumer);
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

  private static QueuedMessage queuedMessage(ResultSet rs, String queueKey) throws SQLException {
    Message message = PostgresDialect.INSTANCE.message(rs, 1);
    long sequence = rs.getLong(11);
    Long seq = rs.wasNull() ? null : sequence;
    return new QueuedMessage(message, queueKey, seq, rs.getLong(13), rs.getInt(12));
  }

  private static boolean record(Connection tx, String sql, String consumer, UUID messageId) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement(sql)) {
      p.setString(1, consumer);
      p.setObject(2, messageId);
      return p.executeUpdate() == 1;
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
