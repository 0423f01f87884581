package io.txbox.cdc;

import io.txbox.TxboxException;
import io.txbox.cdc.internal.SlotCheckpoints;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a {@link LogicalRelay} reads from: a replication slot with the {@code pgoutput} plugin, a
 * publication of the outbox table's inserts, and the prefix of the events' WAL messages. {@link
 * #migrate()} creates them (and the outbox tables, and the SQL function plain-SQL writers call);
 * {@link #drop()} removes slot and publication; {@link #status()} tells how far behind the slot is.
 *
 * <pre>{@code
 * PostgresOutboxStore store = PostgresOutboxStore.builder(dataSource).build();
 * LogicalReplication replication = LogicalReplication.builder(dataSource, store).slot("txbox").build();
 * replication.migrate();  // needs wal_level = logical; safe to repeat
 * }</pre>
 *
 * <p>A slot keeps every WAL segment from its confirmed position on: while no relay streams it,
 * the server's {@code pg_wal} grows by the database's whole write volume. Bound it with the server
 * setting {@code max_slot_wal_keep_size}; a slot that passes it is invalidated, and the relay
 * stops with the recovery steps rather than skip anything.
 *
 * <table>
 *   <caption>Settings and their defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>rule</th></tr>
 *   <tr><td>slot</td><td>{@value #DEFAULT_SLOT}</td><td>{@code [a-z0-9_]}, 1 to 63 characters</td></tr>
 *   <tr><td>publication</td><td>{@value #DEFAULT_PUBLICATION}</td><td>{@code [a-z0-9_]}, 1 to 63 characters</td></tr>
 *   <tr><td>messagePrefix</td><td>{@value #DEFAULT_MESSAGE_PREFIX}</td><td>{@code A-Z a-z 0-9 . _ -}, 1 to 64 characters</td></tr>
 * </table>
 */
public final class LogicalReplication {
  private static final Logger log = LoggerFactory.getLogger(LogicalReplication.class);
  /** Default slot name. */
  public static final String DEFAULT_SLOT = "txbox";
  /** Default publication name. */
  public static final String DEFAULT_PUBLICATION = "txbox";
  /** Default prefix of the events' WAL messages. */
  public static final String DEFAULT_MESSAGE_PREFIX = "txbox";
  /**
   * The {@code application_name} of a relay's replication connection, as {@code
   * pg_stat_replication} shows it; {@code synchronous_standby_names} must not match it.
   */
  public static final String RELAY_APPLICATION_NAME = "txbox-logical-relay";

  private static final Pattern SQL_NAME = Pattern.compile("[a-z0-9_]{1,63}");
  private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9._-]{1,64}");
  private static final String DUPLICATE_OBJECT = "42710";

  private final DataSource dataSource;
  private final PostgresOutboxStore store;
  private final String slot;
  private final String publication;
  private final String messagePrefix;

  private LogicalReplication(Builder b) {
    this.dataSource = b.dataSource;
    this.store = b.store;
    this.slot = b.slot;
    this.publication = b.publication;
    this.messagePrefix = b.messagePrefix;
  }

  /**
   * A builder over the database's pool and the store whose tables it replicates, which must be
   * PostgreSQL's: logical decoding is PostgreSQL's alone. A front end that names no database passes
   * the store its {@code Database} built, and another database's store is refused here, by name.
   */
  public static Builder builder(DataSource dataSource, JdbcOutboxStore store) {
    if (store instanceof PostgresOutboxStore postgres) {
      return new Builder(dataSource, postgres);
    }
    throw new IllegalArgumentException("store must be PostgreSQL's for logical decoding, which is PostgreSQL's"
        + " alone; was " + (store == null ? "null" : store.getClass().getSimpleName() + " (" + store.operator().outboxTable()
        + ")") + ": relay this outbox with the table relay");
  }

  /**
   * Creates or upgrades the outbox tables (the table of the relay's checkpoints among them, a
   * versioned script of the store's since schema version 9), the function {@code
   * <schema>.<prefix>emit}, the publication and the slot; safe to repeat. Creating the
   * slot waits for the write transactions open at that moment to end. From PostgreSQL 17 on the
   * slot is a failover slot, which standbys with {@code sync_replication_slots} keep in step.
   *
   * <p>A slot that is missing where the relay's checkpoint says it was streamed (a standby
   * promoted before PostgreSQL 17 has none) is left to the relay, which creates it and relays
   * first, from the outbox table, what the checkpoint does not cover: a slot created here would
   * start at today's position and skip that.
   *
   * @throws TxboxException when the server does not run with {@code wal_level = logical}, naming
   *     the setting and how to change it
   */
  public void migrate() {
    store.migrate();
    SlotCheckpoints checkpoints = checkpoints();
    try (Connection c = dataSource.getConnection()) {
      requireLogicalWal(c);
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("SELECT pg_advisory_xact_lock(hashtext('txbox-logical-replication'))");
        s.execute(EmitFunction.sql(store.schema(), store.tablePrefix(), utf8Database(c)));
        if (!exists(c, "SELECT 1 FROM pg_publication WHERE pubname = ?", publication)) {
          s.execute("CREATE PUBLICATION " + publication + " FOR TABLE " + store.operator().outboxTable()
              // A partitioned outbox's inserts are published under its own name, not its partitions'.
              + " WITH (publish = 'insert', publish_via_partition_root = true)");
        }
      }
      markRowsNotNeeded(c);
      c.commit();
      c.setAutoCommit(true);
      // A slot cannot be created in a transaction that has written anything.
      if (!exists(c, "SELECT 1 FROM pg_replication_slots WHERE slot_name = ?", slot)) {
        if (checkpoints.read().isPresent()) {
          log.warn("slot {} is missing, though a relay streamed it (a failover to a standby without it?): not"
              + " created here; the relay creates it and first relays from the outbox table what its last"
              + " checkpoint does not cover", slot);
          return;
        }
        // The checkpoint is taken before the slot: what it calls delivered committed before the
        // slot began, which the slot was never to carry.
        SlotCheckpoints.Candidate before = checkpoints.candidate();
        checkpoints.createSlot(c);
        checkpoints.write(before, false);
      }
    } catch (SQLException e) {
      if (!DUPLICATE_OBJECT.equals(e.getSQLState())) { // another instance created it meanwhile
        throw new TxboxException("cannot set up logical replication (slot " + slot + ", publication "
            + publication + "): " + e.getMessage(), e);
      }
    }
  }

  /**
   * The slot reads events from the WAL, never from the outbox table, so its subscription's
   * checkpoints stand past every row: the {@link io.txbox.Janitor} deletes relayed rows by the other
   * subscriptions' checkpoints and the retention alone, as if this slot were not there.
   */
  private void markRowsNotNeeded(Connection c) throws SQLException {
    try (PreparedStatement p = c.prepareStatement("INSERT INTO " + subscriptionTable()
        + " (subscription, bucket, tx_id, position)"
        + " SELECT ?, b, '" + Long.toUnsignedString(-1L) + "'::xid8, " + Long.MAX_VALUE
        + " FROM generate_series(0, (SELECT value::int FROM " + store.tables().setting()
        + " WHERE name = 'bucket_count') - 1) AS b"
        + " ON CONFLICT (subscription, bucket) DO UPDATE SET tx_id = excluded.tx_id, position = excluded.position")) {
      p.setString(1, slot);
      p.executeUpdate();
    }
  }

  private String subscriptionTable() {
    return store.tables().subscription();
  }

  /**
   * Drops the slot and the publication, if they exist. The slot must not be streamed: stop the
   * relays first. Events committed after the slot's confirmed position and not relayed yet are no
   * longer delivered unless the outbox table holds them.
   */
  public void drop() {
    try (Connection c = dataSource.getConnection()) {
      Optional<SlotStatus> now = status(c);
      if (now.isPresent() && now.get().active()) {
        throw new TxboxException("slot " + slot + " is streamed by server process " + now.get().activePid()
            + "; stop the relays of this slot before dropping it");
      }
      try (Statement s = c.createStatement()) {
        if (now.isPresent()) {
          s.execute("SELECT pg_drop_replication_slot('" + slot + "')");
        }
        s.execute("DROP PUBLICATION IF EXISTS " + publication);
      }
      try (PreparedStatement p = c.prepareStatement("DELETE FROM " + subscriptionTable() + " WHERE subscription = ?")) {
        p.setString(1, slot);
        p.executeUpdate();
      }
      if (exists(c, "SELECT 1 WHERE to_regclass(?) IS NOT NULL", checkpoints().table())) {
        try (PreparedStatement p = c.prepareStatement("DELETE FROM " + checkpoints().table() + " WHERE slot = ?")) {
          p.setString(1, slot);
          p.executeUpdate();
        }
      }
    } catch (SQLException e) {
      throw new TxboxException("cannot drop slot " + slot + ": " + e.getMessage(), e);
    }
  }

  /** The slot's state now, or empty when it does not exist. */
  public Optional<SlotStatus> status() {
    try (Connection c = dataSource.getConnection()) {
      return status(c);
    } catch (SQLException e) {
      throw new TxboxException("cannot read the state of slot " + slot + ": " + e.getMessage(), e);
    }
  }

  private Optional<SlotStatus> status(Connection c) throws SQLException {
    return SlotReport.slot(c, slot);
  }

  /** The WAL messages this slot's relays could not read after a failover, until acknowledged. */
  public Optional<SlotGap> gap() {
    return SlotReport.gaps(dataSource, store).stream().filter(g -> g.slot().equals(slot)).findFirst();
  }

  /** Forgets the gap: its events were sent again, or are known not to matter. */
  public void acknowledgeGap() {
    try (Connection c = dataSource.getConnection(); PreparedStatement p = c.prepareStatement("UPDATE "
        + checkpoints().table() + " SET gap_from_lsn = NULL, gap_to_lsn = NULL, gap_from_time = NULL,"
        + " gap_to_time = NULL, gap_found_at = NULL WHERE slot = ?")) {
      p.setString(1, slot);
      p.executeUpdate();
    } catch (SQLException e) {
      throw new TxboxException("cannot acknowledge the gap of slot " + slot + ": " + e.getMessage(), e);
    }
  }

  /** The checkpoints of this slot's relays. */
  private SlotCheckpoints checkpoints() {
    return new SlotCheckpoints(dataSource, store.tables().slotCheckpoint(), slot);
  }

  /** The slot's name. */
  public String slot() {
    return slot;
  }

  /** The publication's name. */
  public String publication() {
    return publication;
  }

  /** The prefix of the events' WAL messages. */
  public String messagePrefix() {
    return messagePrefix;
  }

  /** The store whose outbox table the publication covers and whose table keeps dead letters. */
  public PostgresOutboxStore store() {
    return store;
  }

  /** The database's pool. */
  public DataSource dataSource() {
    return dataSource;
  }

  private static boolean utf8Database(Connection c) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW server_encoding")) {
      rs.next();
      return "UTF8".equals(rs.getString(1));
    }
  }

  static void requireLogicalWal(Connection c) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW wal_level")) {
      rs.next();
      String level = rs.getString(1);
      if (!"logical".equals(level)) {
        throw new TxboxException("PostgreSQL runs with wal_level = " + level + ", and logical decoding needs"
            + " wal_level = logical: run ALTER SYSTEM SET wal_level = logical (or set it in postgresql.conf)"
            + " and restart the server; max_replication_slots and max_wal_senders need one more each per"
            + " slot (their defaults, 10, are enough for a few)");
      }
    }
  }

  /**
   * What to tell an operator when this database commits asynchronously by default: decoding reads
   * only WAL that is flushed, so an event committed with {@code synchronous_commit = off} leaves
   * only when the WAL writer flushes it, up to {@code wal_writer_delay} later (the demo measured
   * a p50 of 140 ms against 13 ms with commits flushed). Empty when commits are flushed, or when
   * the server cannot be asked now (the relay reports an unreachable server itself).
   */
  Optional<String> asynchronousCommitNotice() {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('synchronous_commit'), current_setting('wal_writer_delay')")) {
      rs.next();
      if (!"off".equals(rs.getString(1))) {
        return Optional.empty();
      }
      return Optional.of("this database commits with synchronous_commit = off by default, and logical decoding"
          + " reads only WAL already flushed: each event waits for the WAL writer, up to wal_writer_delay ("
          + rs.getString(2) + ") after its commit. For commit-to-broker latency in milliseconds, let the writers"
          + " commit with synchronous_commit = on (their transactions, their role or the database), or lower"
          + " wal_writer_delay");
    } catch (SQLException e) {
      return Optional.empty();
    }
  }

  static boolean exists(Connection c, String query, String name) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(query)) {
      p.setString(1, name);
      try (ResultSet rs = p.executeQuery()) {
        return rs.next();
      }
    }
  }

  static String requireName(String setting, String value) {
    if (value == null || !PREFIX.matcher(value).matches()) {
      throw new IllegalArgumentException(setting + " must be 1 to 64 characters of A-Z a-z 0-9 . _ -, was '"
          + value + "'");
    }
    return value;
  }

  /** Builds a {@link LogicalReplication}; {@link #build()} checks every setting. */
  public static final class Builder {
    private final DataSource dataSource;
    private final PostgresOutboxStore store;
    private String slot = DEFAULT_SLOT;
    private String publication = DEFAULT_PUBLICATION;
    private String messagePrefix = DEFAULT_MESSAGE_PREFIX;

    private Builder(DataSource dataSource, PostgresOutboxStore store) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
      this.store = Objects.requireNonNull(store, "store must not be null");
    }

    /** The replication slot; one per relayed stream. Default {@value #DEFAULT_SLOT}. */
    public Builder slot(String slot) {
      this.slot = slot;
      return this;
    }

    /** The publication of the outbox table's inserts. Default {@value #DEFAULT_PUBLICATION}. */
    public Builder publication(String publication) {
      this.publication = publication;
      return this;
    }

    /** The prefix the writers' {@link WalOutboxStore} uses. Default {@value #DEFAULT_MESSAGE_PREFIX}. */
    public Builder messagePrefix(String messagePrefix) {
      this.messagePrefix = messagePrefix;
      return this;
    }

    /** Checks the settings and builds. */
    public LogicalReplication build() {
      requireSqlName("slot", slot);
      requireSqlName("publication", publication);
      requireName("messagePrefix", messagePrefix);
      return new LogicalReplication(this);
    }

    private static void requireSqlName(String setting, String value) {
      if (value == null || !SQL_NAME.matcher(value).matches()) {
        throw new IllegalArgumentException(setting + " must be 1 to 63 characters of a-z 0-9 _, was '"
            + value + "'");
      }
    }
  }
}
