package io.txbox.cdc;

import io.txbox.TxboxException;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * What operators see of the logical-decoding slots of a store's events, read at once: the slots,
 * and every reason they may not deliver or may not survive a failover. {@code txbox status} and
 * the console show it; it knows no slot name, and finds the slots {@link LogicalReplication#migrate()}
 * made for the store, whatever their names. Replication slots are PostgreSQL's: another database's
 * store has none, and its report is empty.
 *
 * <pre>{@code
 * SlotReport report = SlotReport.read(dataSource, store);
 * report.slots().forEach(s -> System.out.println(s.slot() + ": " + s.lagBytes() + " bytes behind"));
 * report.problems().forEach(System.out::println);
 * }</pre>
 *
 * @param slots the store's slots, by name
 * @param problems why those slots may not survive a failover or do not deliver, one sentence
 *     each: a relay that retries a failed publish; a gap a failover left ({@link SlotGap}); and
 *     from PostgreSQL 17 on, with standbys streaming from this server, a slot that is not a
 *     failover slot, or no standby named in {@code synchronized_standby_slots} (a standby promoted
 *     behind the slot's position would lose what the relay confirmed); and from 17 on, standbys or
 *     not, a standby's slot named there that nobody streams (logical decoding waits for it:
 *     delivery stalls); and commits that have waited {@value #SYNCHRONOUS_COMMIT_PATIENCE_SECONDS} s
 *     or longer for a synchronous standby (a standby named in {@code synchronous_standby_names}
 *     that is gone hangs every commit, and a slot being created waits behind them; sessions of
 *     other users are seen with {@code pg_read_all_stats}); and logical relays that {@code
 *     synchronous_standby_names} makes synchronous standbys. The last two hold for the table relay
 *     as well. Empty when nothing is wrong or nothing can be seen from here.
 */
public record SlotReport(List<SlotStatus> slots, List<String> problems) {
  /** A slot's state; its lag and retained WAL measured from where writes go now. */
  private static final String SLOT_STATUS = "SELECT slot_name, active, active_pid, wal_status,"
      + " confirmed_flush_lsn::text, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), confirmed_flush_lsn)::bigint,"
      + " pg_wal_lsn_diff(pg_current_wal_insert_lsn(), restart_lsn)::bigint"
      + " FROM pg_replication_slots";

  /** How long a commit may wait for a synchronous standby before the report names it. */
  public static final int SYNCHRONOUS_COMMIT_PATIENCE_SECONDS = 5;

  public SlotReport {
    slots = List.copyOf(slots);
    problems = List.copyOf(problems);
  }

  /** The report on {@code store}'s slots in the database {@code dataSource} reaches. */
  public static SlotReport read(DataSource dataSource, JdbcOutboxStore store) {
    if (!(store instanceof PostgresOutboxStore postgres)) {
      return new SlotReport(List.of(), List.of());
    }
    List<SlotStatus> slots = slotsOf(dataSource, postgres);
    List<String> problems = new ArrayList<>();
    gaps(dataSource, postgres).forEach(g -> problems.add(g.describe()));
    problems.addAll(retrying(dataSource, postgres));
    problems.addAll(synchronousStandbyProblems(dataSource));
    if (!slots.isEmpty()) {
      problems.addAll(failoverProblems(dataSource, slots));
    }
    return new SlotReport(slots, problems);
  }

  /** The slot named {@code slot}, or empty when it does not exist. */
  static Optional<SlotStatus> slot(Connection c, String slot) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(SLOT_STATUS + " WHERE slot_name = ?")) {
      p.setString(1, slot);
      return slotStatuses(p).stream().findFirst();
    }
  }

  /** The slots of {@code store}'s events: those whose name is a subscription at the log's end. */
  private static List<SlotStatus> slotsOf(DataSource dataSource, PostgresOutboxStore store) {
    String subscriptions = store.tables().subscription();
    try (Connection c = dataSource.getConnection();
        PreparedStatement p = c.prepareStatement(SLOT_STATUS + " WHERE database = current_database()"
            + " AND slot_type = 'logical' AND slot_name IN (SELECT subscription FROM " + subscriptions
            + " WHERE position = " + Long.MAX_VALUE + ") ORDER BY slot_name")) {
      return slotStatuses(p);
    } catch (SQLException e) {
      throw new TxboxException("cannot read the replication slots: " + e.getMessage(), e);
    }
  }

  private static List<SlotStatus> slotStatuses(PreparedStatement query) throws SQLException {
    List<SlotStatus> slots = new ArrayList<>();
    try (ResultSet rs = query.executeQuery()) {
      while (rs.next()) {
        Integer pid = (Integer) rs.getObject(3);
        slots.add(new SlotStatus(rs.getString(1), rs.getBoolean(2), pid, rs.getString(4), rs.getString(5),
            rs.getLong(6), rs.getLong(7)));
      }
    }
    return slots;
  }

  /**
   * The gaps of every slot of {@code store}'s events (see {@link SlotGap}); none where no relay ever
   * checkpointed.
   */
  static List<SlotGap> gaps(DataSource dataSource, PostgresOutboxStore store) {
    String table = store.tables().slotCheckpoint();
    try (Connection c = dataSource.getConnection()) {
      if (!LogicalReplication.exists(c, "SELECT 1 WHERE to_regclass(?) IS NOT NULL", table)) {
        return List.of();
      }
      List<SlotGap> gaps = new ArrayList<>();
      try (PreparedStatement p = c.prepareStatement("SELECT slot, gap_from_lsn::text, gap_from_time,"
          + " gap_to_lsn::text, gap_to_time FROM " + table + " WHERE gap_found_at IS NOT NULL ORDER BY slot");
          ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          gaps.add(new SlotGap(rs.getString(1), rs.getString(2), rs.getTimestamp(3).toInstant(), rs.getString(4),
              rs.getTimestamp(5).toInstant()));
        }
      }
      return gaps;
    } catch (SQLException e) {
      throw new TxboxException("cannot read the slots' checkpoints: " + e.getMessage(), e);
    }
  }

  /**
   * The slots whose relay retries a failed publish, one sentence each, as a polling relay's
   * buckets that retry a failed event are told: the same rule makes either relay's status DEGRADED.
   */
  private static List<String> retrying(DataSource dataSource, PostgresOutboxStore store) {
    String table = store.tables().slotCheckpoint();
    try (Connection c = dataSource.getConnection()) {
      if (!LogicalReplication.exists(c, "SELECT 1 WHERE to_regclass(?) IS NOT NULL", table)) {
        return List.of();
      }
      List<String> problems = new ArrayList<>();
      try (PreparedStatement p = c.prepareStatement("SELECT slot, extract(epoch FROM now() - retrying_since)::bigint,"
          + " retrying_error FROM " + table + " WHERE retrying_since IS NOT NULL ORDER BY slot");
          ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          problems.add("slot " + rs.getString(1) + ": retrying a failed event for " + rs.getLong(2) + " s ("
              + rs.getString(3) + ")");
        }
      }
      return problems;
    } catch (SQLException e) {
      throw new TxboxException("cannot read the slots' checkpoints: " + e.getMessage(), e);
    }
  }

  /** What {@code synchronous_standby_names} holds back now, read on one connection. */
  private static List<String> synchronousStandbyProblems(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      List<String> problems = new ArrayList<>(commitsWaitingForAStandby(c));
      problems.addAll(relaysKeepingCommits(c));
      return problems;
    } catch (SQLException e) {
      throw new TxboxException("cannot read the sessions' waits and the standbys: " + e.getMessage(), e);
    }
  }

  /**
   * Commits of this server that have waited for a synchronous standby longer than {@value
   * #SYNCHRONOUS_COMMIT_PATIENCE_SECONDS} s: none where {@code synchronous_standby_names} is
   * empty, and a few milliseconds each where the standby is there.
   */
  private static List<String> commitsWaitingForAStandby(Connection c) throws SQLException {
    try (PreparedStatement p = c.prepareStatement("SELECT count(*), coalesce(extract(epoch FROM clock_timestamp()"
            + " - min(query_start))::bigint, 0), current_setting('synchronous_standby_names') FROM pg_stat_activity"
            + " WHERE wait_event = 'SyncRep' AND query_start < clock_timestamp() - make_interval(secs => ?)")) {
      p.setInt(1, SYNCHRONOUS_COMMIT_PATIENCE_SECONDS);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        if (rs.getLong(1) == 0) {
          return List.of();
        }
        return List.of(rs.getLong(1) + " commit(s) wait for a synchronous standby, the oldest for " + rs.getLong(2)
            + " s: synchronous_standby_names = '" + rs.getString(3) + "' names a standby that does not confirm."
            + " Every commit hangs, and a slot being created waits behind them; start that standby, or take it out"
            + " of synchronous_standby_names and reload (see docs/failover.md)");
      }
    }
  }

  /**
   * Logical relays that the server counts as synchronous standbys: {@code synchronous_standby_names
   * = '*'} matches their replication connections too, so commits wait for a relay to deliver, and
   * a physical standby listed only as {@code potential} no longer keeps them safe.
   */
  private static List<String> relaysKeepingCommits(Connection c) throws SQLException {
    try (PreparedStatement p = c.prepareStatement("SELECT count(*), current_setting('synchronous_standby_names')"
            + " FROM pg_stat_replication WHERE application_name = ? AND sync_state IN ('sync', 'quorum')")) {
      p.setString(1, LogicalReplication.RELAY_APPLICATION_NAME);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        if (rs.getLong(1) == 0) {
          return List.of();
        }
        return List.of(rs.getLong(1) + " logical relay(s) are synchronous standbys of this server"
            + " (synchronous_standby_names = '" + rs.getString(2) + "' matches their replication connection"
            + " " + LogicalReplication.RELAY_APPLICATION_NAME + "): commits wait for the relay to deliver, and a"
            + " physical standby shown as potential keeps nothing safe. Name the physical standbys there instead of"
            + " '*' (see docs/failover.md)");
      }
    }
  }

  /** From PostgreSQL 17 on: standby slots nobody streams, and slots a promoted standby would lack. */
  private static List<String> failoverProblems(DataSource dataSource, List<SlotStatus> slots) {
    List<String> problems = new ArrayList<>();
    try (Connection c = dataSource.getConnection()) {
      if (c.getMetaData().getDatabaseMajorVersion() < 17) {
        return problems;
      }
      String named;
      try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
          "SELECT current_setting('synchronized_standby_slots')")) {
        rs.next();
        named = rs.getString(1).trim();
      }
      for (String standby : named.isEmpty() ? new String[0] : named.split("\\s*,\\s*")) {
        if (!LogicalReplication.exists(c,
            "SELECT 1 FROM pg_replication_slots WHERE slot_name = ? AND slot_type = 'physical' AND active", standby)) {
          problems.add("standby slot " + standby + " (synchronized_standby_slots) is not streamed: logical decoding"
              + " waits for that standby, so delivery stalls, and it does not keep the failover slots in step; start"
              + " the standby, or take its slot out of synchronized_standby_slots");
        }
      }
      if (physicalStandbys(c) == 0) {
        return problems; // no standby to be promoted: nothing to keep in step
      }
      for (SlotStatus s : slots) {
        if (!LogicalReplication.exists(c, "SELECT 1 FROM pg_replication_slots WHERE slot_name = ? AND failover",
            s.slot())) {
          problems.add("slot " + s.slot() + " is not a failover slot, and standbys stream from this server: a promoted"
              + " standby will not have it (the relay then makes it again and relays outbox rows from the table, but"
              + " WAL messages since its last checkpoint are lost). Drop it with no relay running and let txbox migrate"
              + " --logical make it again, which makes failover slots from PostgreSQL 17 on");
        }
      }
      if (named.isEmpty()) {
        problems.add("no standby slot is named in synchronized_standby_slots: a standby may be promoted behind what"
            + " the relay confirmed, and the failover slot it keeps would lose those events; set it to the physical"
            + " slots of the standbys that can be promoted");
      }
    } catch (SQLException e) {
      throw new TxboxException("cannot read the standbys' state: " + e.getMessage(), e);
    }
    return problems;
  }

  /** Streaming standbys of this server: its walsenders that stream no logical slot. */
  private static int physicalStandbys(Connection c) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_replication r"
        + " WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots s WHERE s.active_pid = r.pid"
        + " AND s.slot_type = 'logical')")) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
