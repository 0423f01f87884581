package io.txbox.mariadb.internal;

import io.txbox.Relay;
import io.txbox.jdbc.StoreStatus;
import io.txbox.jdbc.support.Transactions;
import io.txbox.spi.Backlog;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The SQL behind {@link StoreStatus} on MariaDB: small aggregates over the subscription,
 * dead-letter and inbox tables, read in one transaction; the backlog and the oldest open
 * transaction come from {@link MariaDbStatus}, as the relay's gauges read them.
 */
public final class MariaDbStatusQueries {
  /** Most stalled buckets listed, as on PostgreSQL. */
  private static final int MAX_STALLED = 100;
  private static final String NOW = MariaDbSql.NOW;

  private final Transactions tx;
  private final MariaDbStatus status;
  private final String buckets;
  private final String relays;
  private final String stalled;
  private final String idle;
  private final String outboxDeadLetters;
  private final String inboxDeadLetters;
  private final String writtenPerMinute;

  public MariaDbStatusQueries(DataSource dataSource, MariaDbTables tables, MariaDbStatus status) {
    this.tx = new Transactions(dataSource);
    this.status = status;
    this.buckets = tables.render("SELECT subscription, COUNT(*),"
        + " SUM(owner IS NULL OR lease_until IS NULL OR lease_until <= " + NOW + ")"
        + " FROM {subscription} GROUP BY subscription ORDER BY subscription");
    this.relays = tables.render("SELECT subscription, owner, COUNT(*), MAX(lease_until) FROM {subscription}"
        + " WHERE owner IS NOT NULL AND lease_until > " + NOW + " GROUP BY subscription, owner"
        + " ORDER BY subscription, owner");
    this.stalled = tables.render("SELECT subscription, bucket, owner, attempts, next_attempt_at, last_error"
        + " FROM {subscription} WHERE last_error IS NOT NULL ORDER BY attempts DESC, subscription, bucket"
        + " LIMIT " + MAX_STALLED);
    // The first event each held bucket would read next, when it has been due longer than the limit
    // while the checkpoint stood still. Unlike PostgreSQL's, this cannot leave out an event that an
    // open writer legitimately holds back; the status then lists that writer beside it.
    String limit = NOW + " - INTERVAL " + StoreStatus.NOT_MOVING_AFTER.toSeconds() + " SECOND";
    this.idle = tables.render("SELECT s.subscription, s.bucket, s.owner, s.updated_at FROM {subscription} s"
        + " WHERE s.owner IS NOT NULL AND s.lease_until > " + NOW + " AND s.last_error IS NULL AND s.updated_at < " + limit
        + " AND (SELECT GREATEST(o.created_at, COALESCE(o.available_at, o.created_at)) FROM {outbox} o"
        + "   WHERE o.bucket = s.bucket AND o.position > s.position ORDER BY o.position LIMIT 1) < " + limit
        + " ORDER BY s.subscription, s.bucket LIMIT " + StoreStatus.MAX_IDLE_BUCKETS);
    this.outboxDeadLetters = tables.render("SELECT d.subscription, d.n, d.newest, (SELECT error FROM {dead_letter} e"
        + " WHERE e.subscription = d.subscription ORDER BY dead_lettered_at DESC LIMIT 1)"
        + " FROM (SELECT subscription, COUNT(*) AS n, MAX(dead_lettered_at) AS newest FROM {dead_letter}"
        + " GROUP BY subscription) AS d ORDER BY d.subscription");
    this.inboxDeadLetters = tables.render("SELECT consumer, SUM(status = 'dead'), SUM(status = 'parked'),"
        + " COUNT(DISTINCT queue_key) FROM {inbox_queue} WHERE status IN ('dead', 'parked')"
        + " GROUP BY consumer ORDER BY consumer");
    // A scan of the log's last minutes: the janitor keeps the log short, so this stays cheap.
    String minute = "TIMESTAMP(DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:00'))";
    this.writtenPerMinute = tables.render("SELECT " + minute + " AS minute, COUNT(*) FROM {outbox}"
        + " WHERE created_at >= TIMESTAMP(DATE_FORMAT(" + NOW + ", '%Y-%m-%d %H:%i:00')) - INTERVAL ? MINUTE"
        + " GROUP BY minute ORDER BY minute");
  }

  /** Events written to the log per minute over the last {@code minutes}, oldest first; quiet minutes are absent. */
  public List<StoreStatus.Minute> writtenPerMinute(int minutes) {
    return tx.inTransaction("counting events per minute", c -> {
      List<StoreStatus.Minute> counts = new ArrayList<>();
      try (PreparedStatement p = c.prepareStatement(writtenPerMinute)) {
        p.setInt(1, minutes);
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            counts.add(new StoreStatus.Minute(MariaDbRows.instant(rs, 1), rs.getLong(2)));
          }
        }
      }
      return counts;
    });
  }

  /** The whole status; MariaDB's outbox is never partitioned. */
  public StoreStatus read(int limitPerBucket) {
    record Snapshot(Map<String, int[]> buckets, Map<String, List<StoreStatus.RelayInstance>> relays,
        List<StoreStatus.StalledBucket> stalled, List<StoreStatus.IdleBucket> idle,
        List<StoreStatus.OutboxDeadLetters> outbox, List<StoreStatus.InboxDeadLetters> inbox) {}
    Snapshot s = tx.inTransaction("reading the status", c -> new Snapshot(buckets(c), relays(c), stalled(c),
        idle(c), outboxDeadLetters(c), inboxDeadLetters(c)));
    Instant now = Instant.now();
    List<StoreStatus.Subscription> subscriptions = new ArrayList<>();
    s.buckets().forEach((name, counts) -> {
      Backlog b = status.backlog(name, limitPerBucket);
      subscriptions.add(new StoreStatus.Subscription(name, b.pending(), b.capped(), b.oldestAge(now),
          s.relays().getOrDefault(name, List.of()), counts[0], counts[1]));
    });
    // No subscription at all: the backlog then counts the whole log, as its first relay will read it.
    Optional<Backlog> waitingForFirstRelay = s.buckets().isEmpty()
        ? Optional.of(status.backlog(Relay.DEFAULT_SUBSCRIPTION, limitPerBucket)) : Optional.empty();
    return new StoreStatus(subscriptions, s.stalled(), s.idle(), s.outbox(), s.inbox(), status.oldestOpenTransaction(),
        Optional.empty(), waitingForFirstRelay);
  }

  private Map<String, int[]> buckets(Connection c) throws SQLException {
    Map<String, int[]> found = new LinkedHashMap<>();
    query(c, buckets, rs -> found.put(rs.getString(1), new int[] {rs.getInt(2), rs.getInt(3)}));
    return found;
  }

  private Map<String, List<StoreStatus.RelayInstance>> relays(Connection c) throws SQLException {
    Map<String, List<StoreStatus.RelayInstance>> found = new LinkedHashMap<>();
    query(c, relays, rs -> found.computeIfAbsent(rs.getString(1), s -> new ArrayList<>())
        .add(new StoreStatus.RelayInstance(rs.getString(2), rs.getInt(3), MariaDbRows.instant(rs, 4))));
    return found;
  }

  private List<StoreStatus.StalledBucket> stalled(Connection c) throws SQLException {
    List<StoreStatus.StalledBucket> found = new ArrayList<>();
    query(c, stalled, rs -> found.add(new StoreStatus.StalledBucket(rs.getString(1), rs.getInt(2), rs.getString(3),
        rs.getInt(4), MariaDbRows.instant(rs, 5), rs.getString(6))));
    return found;
  }

  private List<StoreStatus.IdleBucket> idle(Connection c) throws SQLException {
    List<StoreStatus.IdleBucket> found = new ArrayList<>();
    query(c, idle, rs -> found.add(new StoreStatus.IdleBucket(rs.getString(1), rs.getInt(2), rs.getString(3),
        MariaDbRows.instant(rs, 4))));
    return found;
  }

  private List<StoreStatus.OutboxDeadLetters> outboxDeadLetters(Connection c) throws SQLException {
    List<StoreStatus.OutboxDeadLetters> found = new ArrayList<>();
    query(c, outboxDeadLetters, rs -> found.add(new StoreStatus.OutboxDeadLetters(rs.getString(1), rs.getLong(2),
        MariaDbRows.instant(rs, 3), rs.getString(4))));
    return found;
  }

  private List<StoreStatus.InboxDeadLetters> inboxDeadLetters(Connection c) throws SQLException {
    List<StoreStatus.InboxDeadLetters> found = new ArrayList<>();
    query(c, inboxDeadLetters, rs -> found.add(
        new StoreStatus.InboxDeadLetters(rs.getString(1), rs.getLong(2), rs.getLong(3), rs.getLong(4))));
    return found;
  }

  private interface Row {
    void read(ResultSet rs) throws SQLException;
  }

  private static void query(Connection c, String sql, Row row) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(sql); ResultSet rs = p.executeQuery()) {
      while (rs.next()) {
        row.read(rs);
      }
    }
  }
}
