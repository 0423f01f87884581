package io.txbox.postgres.internal;

import io.txbox.jdbc.spi.Transactions;
import io.txbox.postgres.PostgresTables;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbox as a table partitioned by position range, so that retention drops whole partitions
 * instead of deleting rows: no dead tuples, no vacuum debt, a size bounded by the retention window
 * plus the partitions kept ahead.
 *
 * <p>Layout: partitions {@code <prefix>outbox_p<from>} of {@code size} positions each, created
 * ahead of the writers by the janitor, and a default partition {@code <prefix>outbox_default}
 * that catches any row no range partition covers (the janitor fell behind), so a writer never
 * fails for want of a partition. Rows in the default partition are deleted one by one, as in the
 * plain table.
 *
 * <p>A range partition is dropped only when all of these hold: every position in it has been
 * handed out (the identity sequence passed its end, so no new row can go there), its newest row is
 * older than the retention, and, checked while holding an {@code ACCESS EXCLUSIVE} lock on the
 * outbox, every subscription's checkpoint in every bucket lies at or past its rows. Under that
 * lock no transaction that wrote to the outbox is still open, so no row can still commit into it
 * unseen. The lock is waited for at most {@code lockTimeout}: writers queue behind it that long
 * at worst, and the janitor tries again next round. A row that still comes for a dropped range
 * (a sequence whose CACHE handed a value out early) finds no range partition and lands in the
 * default one, where it is relayed as usual. The newest row is read once per partition and
 * remembered: a row that commits into it later is still relayed before the drop, but may be
 * dropped before its own retention has passed.
 */
public final class OutboxPartitions {
  private static final Logger log = LoggerFactory.getLogger(OutboxPartitions.class);
  private static final Pattern RANGE = Pattern.compile(
      "FOR VALUES FROM \\((?:'(-?\\d+)'|MINVALUE)\\) TO \\((?:'(-?\\d+)'|MAXVALUE)\\)");
  private static final String LOCK_NOT_AVAILABLE = "55P03";
  /** The setting that holds the positions per partition, for partitions created from now on. */
  public static final String SIZE_SETTING = "outbox_partition_size";

  /** A range partition: positions {@code [from, to)}. */
  public record Range(String name, long from, long to) {}

  /**
   * The partitions (names without schema, the default one null if absent) as they are now, the
   * last position handed out and the database's clock.
   */
  public record Layout(List<Range> ranges, String defaultPartition, long handedOut, long size, Instant now) {}

  /** Row count and newest row of a partition all of whose positions were handed out. */
  private record Sealed(long rows, Instant newest) {}

  private final PostgresTables tables;
  private final Transactions tx;
  private final JanitorLock janitorLock;
  private final int ahead;
  private final Duration lockTimeout;
  private final Map<String, Sealed> sealed = new ConcurrentHashMap<>();

  public OutboxPartitions(PostgresTables tables, Transactions tx, int ahead, Duration lockTimeout) {
    this.tables = tables;
    this.tx = tx;
    this.janitorLock = new JanitorLock(tables, tx);
    this.ahead = ahead;
    this.lockTimeout = lockTimeout;
  }

  /** Whether the outbox is partitioned; one catalog read. */
  public static boolean isPartitioned(Connection c, PostgresTables tables) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(
        "SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass(?)")) {
      p.setString(1, tables.outbox());
      try (ResultSet rs = p.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  /**
   * Turns the plain outbox into a partitioned one in the caller's transaction, keeping every row:
   * the old table becomes the partition below the next position, the identity continues where it
   * was, the CHECK constraints and publications carry over. Then creates {@code ahead} partitions.
   */
  public static void convert(Connection c, PostgresTables t, long size, int ahead) throws SQLException {
    String old = t.prefix() + "outbox_p0";
    try (Statement s = c.createStatement()) {
      s.execute("LOCK TABLE " + t.outbox() + " IN ACCESS EXCLUSIVE MODE");
      long next = Math.max(sequenceNext(c, t), maxPosition(c, t) + 1);
      List<String> checks = strings(c, "SELECT quote_ident(conname) || ' ' || pg_get_constraintdef(oid)"
          + " FROM pg_constraint WHERE conrelid = ?::regclass AND contype = 'c' ORDER BY conname", t.outbox());
      List<String> publications = strings(c, "SELECT quote_ident(p.pubname) FROM pg_publication_rel r"
          + " JOIN pg_publication p ON p.oid = r.prpubid WHERE r.prrelid = ?::regclass", t.outbox());
      s.execute("ALTER TABLE " + t.outbox() + " ALTER COLUMN position DROP IDENTITY");
      s.execute("ALTER TABLE " + t.outbox() + " RENAME TO " + old);
      s.execute("ALTER INDEX " + t.outbox() + "_pkey RENAME TO " + old + "_pkey");
      // Constraints are added after the old table is attached: LIKE would copy them as valid, and
      // a valid constraint cannot take in the old table's NOT VALID one (rows it never checked).
      s.execute("CREATE TABLE " + t.outbox() + " (LIKE " + t.schema() + "." + old
          + " INCLUDING ALL EXCLUDING CONSTRAINTS) PARTITION BY RANGE (position)");
      s.execute("ALTER TABLE " + t.outbox() + " ALTER COLUMN position ADD GENERATED ALWAYS AS IDENTITY"
          + " (START WITH " + next + ")");
      s.execute("ALTER TABLE " + t.outbox() + " ATTACH PARTITION " + t.schema() + "." + old
          + " FOR VALUES FROM (MINVALUE) TO (" + next + ")");
      s.execute("CREATE TABLE " + t.schema() + "." + t.prefix() + "outbox_default PARTITION OF "
          + t.outbox() + " DEFAULT");
      for (String check : checks) {
        s.execute("ALTER TABLE " + t.outbox() + " ADD CONSTRAINT " + check);
      }
      for (String publication : publications) {
        // Without publish_via_partition_root, inserts would be published under each partition's
        // name, and a relay streaming the outbox table would not see them.
        s.execute("ALTER PUBLICATION " + publication + " DROP TABLE " + t.schema() + "." + old);
        s.execute("ALTER PUBLICATION " + publication + " ADD TABLE " + t.outbox());
        s.execute("ALTER PUBLICATION " + publication + " SET (publish_via_partition_root = true)");
      }
      for (long from = next; from < next + ahead * size; from += size) {
        s.execute(createPartition(t, from));
        s.execute(attachPartition(t, from, from + size));
      }
      log.info("converted {} to partitions of {} positions from position {}", t.outbox(), size, next);
    }
  }

  /** Records the positions per partition, for the janitor to create partitions of that size. */
  public static void saveSize(Connection c, PostgresTables t, long size) throws SQLException {
    try (PreparedStatement p = c.prepareStatement("INSERT INTO " + t.setting() + " (name, value)"
        + " VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value")) {
      p.setString(1, SIZE_SETTING);
      p.setString(2, Long.toString(size));
      p.executeUpdate();
    }
  }

  /**
   * One janitor round on the partitioned outbox: deletes up to {@code limit} relayed rows from the
   * default partition, keeps {@code ahead} partitions ahead of the writers, and drops the oldest
   * partitions that may go.
   *
   * @param deleteFromDefault the plain table's delete, aimed at the default partition
   * @return rows removed, or empty when another janitor holds the lock
   */
  public OptionalInt clean(Duration retention, int limit, String deleteFromDefault) {
    OptionalInt deleted = janitorLock.run("deleting relayed outbox events", c -> {
      try (PreparedStatement p = c.prepareStatement(deleteFromDefault)) {
        p.setLong(1, retention.toMillis());
        p.setInt(2, limit);
        p.setInt(3, limit);
        return p.executeUpdate();
      }
    });
    if (deleted.isEmpty() || deleted.getAsInt() >= limit) {
      return deleted; // the janitor calls again for the next batch
    }
    Layout layout = tx.inTransaction("reading the outbox partitions", c -> layout(c, tables));
    if (!createAhead(layout)) {
      return deleted; // another janitor took the lock meanwhile
    }
    long dropped = dropRelayed(layout, retention);
    return OptionalInt.of((int) Math.min(Integer.MAX_VALUE, deleted.getAsInt() + dropped));
  }

  /** The qualified name of the default partition. */
  public String defaultPartition() {
    return tables.schema() + "." + tables.prefix() + "outbox_default";
  }

  /** The outbox's partitions as they are now; the outbox must be partitioned. */
  public static Layout layout(Connection c, PostgresTables tables) throws SQLException {
    List<Range> ranges = new ArrayList<>();
    String defaultPartition = null;
    try (PreparedStatement p = c.prepareStatement("SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)"
        + " FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = ?::regclass")) {
      p.setString(1, tables.outbox());
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          Matcher m = RANGE.matcher(rs.getString(2));
          if (m.matches()) {
            ranges.add(new Range(rs.getString(1), bound(m.group(1), Long.MIN_VALUE), bound(m.group(2), Long.MAX_VALUE)));
          } else if ("DEFAULT".equals(rs.getString(2))) {
            defaultPartition = rs.getString(1);
          }
        }
      }
    }
    ranges.sort(Comparator.comparingLong(Range::from));
    long size = Long.parseLong(strings(c, "SELECT value FROM " + tables.setting() + " WHERE name = ?", SIZE_SETTING)
        .stream().findFirst().orElseThrow(() -> new SQLException(tables.outbox() + " is partitioned but "
            + tables.setting() + " has no " + SIZE_SETTING + "; run txbox migrate --outbox-partition-size")));
    return new Layout(ranges, defaultPartition, sequenceNext(c, tables) - 1, size, databaseNow(c));
  }

  private static long bound(String digits, long unbounded) {
    return digits == null ? unbounded : Long.parseLong(digits);
  }

  /** Creates partitions until {@code ahead} of them lie wholly past the last position handed out. */
  private boolean createAhead(Layout layout) {
    long waiting = layout.ranges().stream().filter(r -> r.from() > layout.handedOut()).count();
    if (waiting >= ahead) {
      return true;
    }
    long top = layout.ranges().stream().mapToLong(Range::to).max().orElse(layout.handedOut() + 1);
    OptionalInt created = janitorLock.run("creating outbox partitions", c -> {
      setLockTimeout(c);
      try {
        long from = top;
        long margin = layout.size() / 10;
        if (top - layout.handedOut() <= margin) {
          // Behind, or about to be: writers are at or past the top, their rows go to the default
          // partition. With that partition locked, read where they are now and start a tenth of a
          // partition past them, so that no row in flight belongs to the new range.
          long inDefault = maxInDefault(c, layout);
          long handedOut = sequenceNext(c, tables) - 1;
          from = Math.max(top, Math.max(inDefault, handedOut) + 1 + margin);
        }
        try (Statement s = c.createStatement()) {
          for (long i = waiting; i < ahead; i++, from += layout.size()) {
            s.execute(createPartition(tables, from));
            s.execute(attachPartition(tables, from, from + layout.size()));
          }
        }
        return (int) (ahead - waiting);
      } catch (SQLException e) {
        return givenUpIfLockTimedOut(c, e, "no outbox partition created this round");
      }
    });
    return created.isPresent();
  }

  private long maxInDefault(Connection c, Layout layout) throws SQLException {
    if (layout.defaultPartition() == null) {
      return Long.MIN_VALUE + 1;
    }
    String partition = tables.schema() + "." + layout.defaultPartition();
    try (Statement s = c.createStatement()) {
      // The lock keeps rows from arriving in the default partition between this read and the
      // attach, which checks the default partition holds no row of the new range.
      s.execute("LOCK TABLE " + partition + " IN ACCESS EXCLUSIVE MODE");
      try (ResultSet rs = s.executeQuery("SELECT coalesce(max(position), 0) FROM " + partition)) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** Drops the oldest partitions that may go, oldest first; stops at the first that may not. */
  private long dropRelayed(Layout layout, Duration retention) {
    long dropped = 0;
    Instant horizon = layout.now().minus(retention);
    for (Range range : layout.ranges()) {
      if (range.to() - 1 > layout.handedOut()) {
        return dropped; // positions of it are still to be handed out
      }
      Sealed stats = sealed.computeIfAbsent(range.name(), name -> tx.inTransaction(
          "reading outbox partition " + name, c -> sealedStats(c, name)));
      if (stats.newest() != null && !stats.newest().isBefore(horizon)) {
        return dropped;
      }
      OptionalInt done = janitorLock.run("dropping outbox partition " + range.name(), c -> drop(c, range));
      if (done.isEmpty() || done.getAsInt() == 0) {
        return dropped;
      }
      sealed.remove(range.name());
      dropped += stats.rows();
    }
    return dropped;
  }

  private Sealed sealedStats(Connection c, String name) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*), max(created_at) FROM " + tables.schema() + "." + name)) {
      rs.next();
      Timestamp newest = rs.getTimestamp(2);
      return new Sealed(rs.getLong(1), newest == null ? null : newest.toInstant());
    }
  }

  /** 1 when dropped; 0 when the lock was not had in time or a row is not relayed yet. */
  private int drop(Connection c, Range range) throws SQLException {
    String partition = tables.schema() + "." + range.name();
    setLockTimeout(c);
    try (Statement s = c.createStatement()) {
      try {
        s.execute("LOCK TABLE " + tables.outbox() + " IN ACCESS EXCLUSIVE MODE");
      } catch (SQLException e) {
        return givenUpIfLockTimedOut(c, e, "outbox partition " + partition + " stays this round");
      }
      // One index probe per subscription and bucket on the partition's primary key.
      try (ResultSet rs = s.executeQuery("SELECT NOT EXISTS (SELECT 1 FROM " + partition + ")"
          + " OR (EXISTS (SELECT 1 FROM " + tables.subscription() + ")"
          + "   AND NOT EXISTS (SELECT 1 FROM " + tables.subscription() + " sub WHERE EXISTS ("
          + "     SELECT 1 FROM " + partition + " o WHERE o.bucket = sub.bucket"
          + "       AND (o.tx_id, o.position) > (sub.tx_id, sub.position))))")) {
        rs.next();
        if (!rs.getBoolean(1)) {
          return 0;
        }
      }
      s.execute("DROP TABLE " + partition);
    }
    log.info("dropped outbox partition {} (positions {}{})", partition,
        range.from() == Long.MIN_VALUE ? "up to " : range.from() + " to ", range.to() - 1);
    return 1;
  }

  /**
   * 0 after rolling back, when {@code e} is the lock timeout: a busy outbox is no failure, the
   * next run tries again. Any other error is thrown.
   */
  private int givenUpIfLockTimedOut(Connection c, SQLException e, String what) throws SQLException {
    if (!LOCK_NOT_AVAILABLE.equals(e.getSQLState())) {
      throw e;
    }
    c.rollback();
    log.debug("{}: a lock on the outbox was not had within {}", what, lockTimeout);
    return 0;
  }

  private void setLockTimeout(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("SET LOCAL lock_timeout = '" + Math.max(1, lockTimeout.toMillis()) + "ms'");
    }
  }

  private static String createPartition(PostgresTables t, long from) {
    // Created apart and then attached: attaching locks the outbox only against other schema
    // changes (SHARE UPDATE EXCLUSIVE), where creating it as a partition would block writers.
    return "CREATE TABLE " + t.schema() + "." + t.prefix() + "outbox_p" + from + " (LIKE " + t.outbox()
        + " INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS INCLUDING INDEXES)";
  }

  private static String attachPartition(PostgresTables t, long from, long to) {
    return "ALTER TABLE " + t.outbox() + " ATTACH PARTITION " + t.schema() + "." + t.prefix() + "outbox_p" + from
        + " FOR VALUES FROM (" + from + ") TO (" + to + ")";
  }

  /** The position the identity gives the next row. */
  private static long sequenceNext(Connection c, PostgresTables t) throws SQLException {
    String sequence = strings(c, "SELECT pg_get_serial_sequence(?, 'position')", t.outbox()).get(0);
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM "
            + sequence)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static long maxPosition(Connection c, PostgresTables t) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT coalesce(max(position), 0) FROM " + t.outbox())) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static Instant databaseNow(Connection c) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT now()")) {
      rs.next();
      return rs.getTimestamp(1).toInstant();
    }
  }

  private static List<String> strings(Connection c, String sql, String parameter) throws SQLException {
    List<String> values = new ArrayList<>();
    try (PreparedStatement p = c.prepareStatement(sql)) {
      p.setString(1, parameter);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          values.add(rs.getString(1));
        }
      }
    }
    return values;
  }

  /** Test hook: the partitions' names, oldest first, the default partition last when present. */
  public List<String> names() {
    Layout layout = tx.inTransaction("reading the outbox partitions", c -> layout(c, tables));
    List<String> names = new ArrayList<>(layout.ranges().stream().map(Range::name).toList());
    Optional.ofNullable(layout.defaultPartition()).ifPresent(names::add);
    return names;
  }
}
