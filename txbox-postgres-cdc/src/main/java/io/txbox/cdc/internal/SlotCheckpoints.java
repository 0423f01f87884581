package io.txbox.cdc.internal;

import io.txbox.jdbc.spi.Transactions;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Arrays;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * A logical relay's progress in the outbox's own terms, kept in a table of the outbox's schema
 * ({@code <prefix>slot_checkpoint}), so that it reaches the standbys with the data: which
 * transactions' events are delivered, by transaction id. A slot's confirmed position is the
 * primary's alone before PostgreSQL 17 (slots are not copied to standbys), so after a failover
 * the promoted standby has no slot; this checkpoint says what the new slot must be preceded by:
 * the outbox rows of every transaction it does not cover.
 *
 * <p>A checkpoint is a snapshot {@code S} and the WAL insert position {@code W} read after it in
 * the same statement. Every transaction {@code S} sees as ended wrote its commit record before
 * {@code W}; once the relay has confirmed the slot past {@code W}, all of them are delivered. So
 * the checkpoint is written only then: what it claims is true whoever reads it, and an old one
 * only claims less. {@code S} is kept as the transaction id below which everything had ended
 * ({@code deliveredBelow}, the snapshot's xmax) and the ids below it still open then
 * ({@code stillOpen}), those of other databases left out: they cannot write this outbox.
 */
public final class SlotCheckpoints {
  /** The newest timeline, from the name of the WAL file being written. */
  private static final String TIMELINE =
      "('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::int";
  /** The open ids of the snapshot {@code s} that may belong to this database (see PostgresSql's HORIZON). */
  private static final String OPEN_HERE = "ARRAY(SELECT x::text FROM pg_snapshot_xip(s) AS x WHERE x::xid NOT IN ("
      + "   SELECT a.backend_xid FROM pg_stat_get_activity(NULL) AS a WHERE a.backend_xid IS NOT NULL"
      + "     AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database())"
      + "   UNION ALL SELECT p.transaction FROM pg_prepared_xacts AS p WHERE p.database <> current_database()))";

  /**
   * What a snapshot says, and where the WAL stood once it was taken.
   *
   * @param deliveredBelow every transaction id below it had ended, but those in {@code stillOpen}
   * @param stillOpen ids below {@code deliveredBelow} of this database still open then
   * @param lsn the WAL insert position read after the snapshot
   * @param timeline the server's timeline then
   * @param takenAt the start of the transaction that took the snapshot: never after it, so every
   *     transaction the snapshot does not see as ended committed after this time
   */
  public record Candidate(long deliveredBelow, long[] stillOpen, long lsn, int timeline, Instant takenAt) {
    /** Whether transaction {@code xid} (a full id) had ended when the snapshot was taken. */
    public boolean covers(long xid) {
      return SlotCheckpoints.covers(deliveredBelow, stillOpen, xid);
    }
  }

  /**
   * The checkpoint as stored.
   *
   * @param walMessages whether the slot has carried WAL messages (events no table holds)
   * @param takenAt when its snapshot was taken ({@link Candidate#takenAt()}): an event committed
   *     after it may not be delivered, one committed before it was (column {@code marked_at})
   */
  public record Mark(long deliveredBelow, long[] stillOpen, long lsn, int timeline, boolean walMessages,
      Instant takenAt) {
    /**
     * Whether transaction {@code xid} (a full id) had ended when the snapshot was taken: every
     * outbox row it wrote is delivered, since a checkpoint is written only once everything it
     * covers was.
     */
    public boolean covers(long xid) {
      return SlotCheckpoints.covers(deliveredBelow, stillOpen, xid);
    }
  }

  private static boolean covers(long deliveredBelow, long[] stillOpen, long xid) {
    if (xid >= deliveredBelow) {
      return false;
    }
    for (long open : stillOpen) {
      if (open == xid) {
        return false;
      }
    }
    return true;
  }

  /**
   * The slot as the server shows it, where it exists.
   *
   * @param confirmedLsn where a stream of it starts
   * @param synced PostgreSQL 17 on: kept in step from a former primary ({@code sync_replication_slots})
   * @param failover PostgreSQL 17 on: created to be kept in step on standbys
   */
  public record Slot(long confirmedLsn, boolean synced, boolean failover, boolean lost) {}

  private final String table;
  private final String slot;
  private final Transactions tx;

  /** The checkpoints of {@code slot}, in {@code table} ({@code PostgresTables.slotCheckpoint()}). */
  public SlotCheckpoints(DataSource dataSource, String table, String slot) {
    this.table = table;
    this.slot = slot;
    this.tx = new Transactions(dataSource);
  }

  /** The statement that reads a {@link Candidate}: the statement's snapshot (or the transaction's, at REPEATABLE READ). */
  static final String CANDIDATE = "SELECT pg_snapshot_xmax(s)::text, " + OPEN_HERE + ","
      + " pg_current_wal_insert_lsn()::text, " + TIMELINE + ", transaction_timestamp() FROM pg_current_snapshot() AS s";

  /** A snapshot and the WAL position after it, on a connection of the pool; see the class comment. */
  public Candidate candidate() {
    return tx.inTransaction("reading a checkpoint of slot " + slot, c -> {
      try (PreparedStatement p = c.prepareStatement(CANDIDATE); ResultSet rs = p.executeQuery()) {
        rs.next();
        return candidate(rs);
      }
    });
  }

  static Candidate candidate(ResultSet rs) throws SQLException {
    return new Candidate(Long.parseUnsignedLong(rs.getString(1)), ids(rs.getArray(2)), Lsn.parse(rs.getString(3)),
        rs.getInt(4), rs.getTimestamp(5).toInstant());
  }

  /** The checkpoint written last, if any. */
  public Optional<Mark> read() {
    return tx.inTransaction("reading the checkpoint of slot " + slot, c -> {
      try (PreparedStatement p = c.prepareStatement("SELECT delivered_below::text, still_open::text[],"
          + " confirmed_lsn::text, timeline, wal_messages, marked_at FROM " + table + " WHERE slot = ?")) {
        p.setString(1, slot);
        try (ResultSet rs = p.executeQuery()) {
          if (!rs.next()) {
            return Optional.empty();
          }
          return Optional.of(new Mark(Long.parseUnsignedLong(rs.getString(1)), ids(rs.getArray(2)),
              Lsn.parse(rs.getString(3)), rs.getInt(4), rs.getBoolean(5), rs.getTimestamp(6).toInstant()));
        }
      }
    });
  }

  /**
   * Writes {@code c} as delivered, unless a checkpoint of a later timeline or position is there
   * already (an old relay's late write only ever claims less, and is dropped).
   */
  public void write(Candidate c, boolean walMessages) {
    tx.inTransaction("writing the checkpoint of slot " + slot, conn -> {
      try (PreparedStatement p = conn.prepareStatement("INSERT INTO " + table
          + " (slot, delivered_below, still_open, confirmed_lsn, timeline, wal_messages, marked_at)"
          // marked_at: when its snapshot was taken, not when it is written, which is later: a
          // failover's range of lost WAL messages starts there (see recordGap)
          + " VALUES (?, ?::xid8, ?::xid8[], ?::pg_lsn, ?, ?, ?)"
          + " ON CONFLICT (slot) DO UPDATE SET delivered_below = excluded.delivered_below,"
          + " still_open = excluded.still_open, confirmed_lsn = excluded.confirmed_lsn,"
          + " timeline = excluded.timeline, wal_messages = " + table + ".wal_messages OR excluded.wal_messages,"
          + " marked_at = excluded.marked_at"
          + " WHERE " + table + ".timeline < excluded.timeline OR (" + table + ".timeline = excluded.timeline"
          + " AND " + table + ".confirmed_lsn <= excluded.confirmed_lsn)")) {
        p.setString(1, slot);
        p.setString(2, Long.toUnsignedString(c.deliveredBelow()));
        p.setArray(3, conn.createArrayOf("text", Arrays.stream(c.stillOpen()).mapToObj(Long::toUnsignedString)
            .toArray(String[]::new)));
        p.setString(4, Lsn.format(c.lsn()));
        p.setInt(5, c.timeline());
        p.setBoolean(6, walMessages);
        p.setTimestamp(7, Timestamp.from(c.takenAt()));
        return p.executeUpdate();
      }
    });
  }

  /**
   * Records that the slot carries WAL messages, where a checkpoint exists: a failover that loses
   * the slot loses them, and must say so.
   */
  public void noteWalMessages() {
    tx.inTransaction("noting WAL messages on slot " + slot, c -> {
      try (PreparedStatement p = c.prepareStatement("UPDATE " + table + " SET wal_messages = true"
          + " WHERE slot = ? AND NOT wal_messages")) {
        p.setString(1, slot);
        return p.executeUpdate();
      }
    });
  }

  /**
   * Records that the relay retries a publish that failed, with the error, from the first failure
   * on: {@code txbox status} then reports the slot DEGRADED, as it does a polling relay's bucket
   * that retries a failed event. Only where a checkpoint exists, as it does once the relay streams.
   */
  public void noteRetrying(String error) {
    tx.inTransaction("noting a failed publish on slot " + slot, c -> {
      try (PreparedStatement p = c.prepareStatement("UPDATE " + table + " SET retrying_since ="
          + " coalesce(retrying_since, now()), retrying_error = left(?, 500) WHERE slot = ?")) {
        p.setString(1, error);
        p.setString(2, slot);
        return p.executeUpdate();
      }
    });
  }

  /** Records that the relay publishes again: what {@link #noteRetrying} noted is cleared. */
  public void noteDelivering() {
    tx.inTransaction("noting that slot " + slot + " publishes again", c -> {
      try (PreparedStatement p = c.prepareStatement("UPDATE " + table + " SET retrying_since = NULL,"
          + " retrying_error = NULL WHERE slot = ? AND retrying_since IS NOT NULL")) {
        p.setString(1, slot);
        return p.executeUpdate();
      }
    });
  }

  /**
   * Records that events written as WAL messages from the checkpoint's position to {@code to} may
   * never be relayed; an earlier gap not yet acknowledged is widened, not replaced.
   */
  public void recordGap(Mark from, long to) {
    tx.inTransaction("recording a gap of slot " + slot, c -> {
      try (PreparedStatement p = c.prepareStatement("UPDATE " + table + " SET"
          + " gap_from_lsn = coalesce(gap_from_lsn, ?::pg_lsn), gap_from_time = coalesce(gap_from_time, ?),"
          + " gap_to_lsn = ?::pg_lsn, gap_to_time = now(), gap_found_at = now() WHERE slot = ?")) {
        p.setString(1, Lsn.format(from.lsn()));
        p.setTimestamp(2, Timestamp.from(from.takenAt()));
        p.setString(3, Lsn.format(to));
        p.setString(4, slot);
        return p.executeUpdate();
      }
    });
  }

  /** The slot as the server shows it, or empty when it does not exist. */
  public Optional<Slot> slot() {
    return tx.inTransaction("reading slot " + slot, c -> {
      boolean seventeen = c.getMetaData().getDatabaseMajorVersion() >= 17;
      try (PreparedStatement p = c.prepareStatement("SELECT coalesce(confirmed_flush_lsn, restart_lsn)::text,"
          + (seventeen ? " synced, failover," : " false, false,") + " wal_status = 'lost'"
          + " FROM pg_replication_slots WHERE slot_name = ?")) {
        p.setString(1, slot);
        try (ResultSet rs = p.executeQuery()) {
          if (!rs.next()) {
            return Optional.empty();
          }
          return Optional.of(new Slot(rs.getString(1) == null ? 0 : Lsn.parse(rs.getString(1)), rs.getBoolean(2),
              rs.getBoolean(3), rs.getBoolean(4)));
        }
      }
    });
  }

  /**
   * Creates the slot, as a failover slot where the server has them (PostgreSQL 17 on), and
   * returns where its stream starts. Outside any transaction: a slot cannot be created in one
   * that has written.
   */
  public long createSlot(Connection c) throws SQLException {
    boolean seventeen = c.getMetaData().getDatabaseMajorVersion() >= 17;
    try (PreparedStatement p = c.prepareStatement(seventeen
        ? "SELECT lsn::text FROM pg_create_logical_replication_slot(?, 'pgoutput', false, false, true)"
        : "SELECT lsn::text FROM pg_create_logical_replication_slot(?, 'pgoutput')")) {
      p.setString(1, slot);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return Lsn.parse(rs.getString(1));
      }
    }
  }

  /** The server's timeline now. */
  public int timeline() {
    return tx.inTransaction("reading the timeline", c -> {
      try (PreparedStatement p = c.prepareStatement("SELECT " + TIMELINE); ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    });
  }

  /** The table's name, schema included. */
  public String table() {
    return table;
  }

  private static long[] ids(Array array) throws SQLException {
    Object[] values = (Object[]) array.getArray();
    return Arrays.stream(values).mapToLong(v -> Long.parseUnsignedLong(v.toString())).toArray();
  }
}
