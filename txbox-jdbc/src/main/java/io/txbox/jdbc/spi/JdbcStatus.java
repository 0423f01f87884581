package io.txbox.jdbc.spi;

import io.txbox.Relay;
import io.txbox.jdbc.StoreStatus;
import io.txbox.spi.Backlog;
import io.txbox.spi.OpenTransaction;
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
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The SQL behind {@link StoreStatus}, one text for every database: small aggregates over the
 * subscription, dead-letter and inbox tables, read in one transaction. A database gives the two
 * statements that are its own: which held buckets stand still though an event is due (PostgreSQL
 * leaves out what an open transaction holds back), and the events written per minute.
 *
 * <pre>{@code
 * JdbcStatus status = new JdbcStatus(tables, dialect, idleBuckets, writtenPerMinute, c -> Optional.empty());
 * StoreStatus now = status.read(tx, s -> relayStore.backlog(s, 10_000), relayStore::oldestOpenTransaction);
 * }</pre>
 */
public final class JdbcStatus {
  /**
   * Most stalled buckets listed. A bucket is stalled while its next event failed and waits for a
   * retry: its last error is set (its attempts stay 0 while nothing at all gets through, an outage).
   */
  public static final int MAX_STALLED = 100;

  private final SqlDialect dialect;
  private final Partitions partitions;
  private final String buckets;
  private final String relays;
  private final String stalled;
  private final String idle;
  private final String outboxDeadLetters;
  private final String inboxDeadLetters;
  private final String fencedRelays;
  private final String writtenPerMinute;

  /** A partitioned outbox's partitions, read in the status's transaction; empty where there are none. */
  public interface Partitions {
    Optional<StoreStatus.OutboxPartitions> read(Connection c) throws SQLException;
  }

  /**
   * @param idle the held buckets whose next event has been due for longer than
   *     {@link StoreStatus#NOT_MOVING_AFTER} while the checkpoint stood still, at most
   *     {@link StoreStatus#MAX_IDLE_BUCKETS}: subscription, bucket, owner, updated_at
   * @param writtenPerMinute the minutes of the last {@code ?} minutes with their counts, oldest first
   */
  public JdbcStatus(TableNames tables, SqlDialect dialect, String idle, String writtenPerMinute,
      Partitions partitions) {
    this.dialect = dialect;
    this.partitions = partitions;
    this.idle = idle;
    this.writtenPerMinute = writtenPerMinute;
    String now = dialect.now();
    this.buckets = tables.render("SELECT subscription, COUNT(*),"
        + " SUM(CASE WHEN owner IS NULL OR lease_until IS NULL OR lease_until <= " + now + " THEN 1 ELSE 0 END)"
        + " FROM {subscription} GROUP BY subscription ORDER BY subscription");
    this.relays = tables.render("SELECT subscription, owner, COUNT(*), MAX(lease_until) FROM {subscription}"
        + " WHERE owner IS NOT NULL AND lease_until > " + now + " GROUP BY subscription, owner"
        + " ORDER BY subscription, owner");
    this.stalled = tables.render("SELECT subscription, bucket, owner, attempts, next_attempt_at, last_error"
        + " FROM {subscription} WHERE last_error IS NOT NULL ORDER BY attempts DESC, subscription, bucket"
        + " LIMIT " + MAX_STALLED);
    this.outboxDeadLetters = tables.render("SELECT d.subscription, d.n, d.newest, (SELECT error FROM {dead_letter} e"
        + " WHERE e.subscription = d.subscription ORDER BY dead_lettered_at DESC LIMIT 1)"
        + " FROM (SELECT subscription, COUNT(*) AS n, MAX(dead_lettered_at) AS newest FROM {dead_letter}"
        + " GROUP BY subscription) AS d ORDER BY d.subscription");
    this.inboxDeadLetters = tables.render("SELECT consumer, SUM(CASE WHEN status = 'dead' THEN 1 ELSE 0 END),"
        + " SUM(CASE WHEN status = 'parked' THEN 1 ELSE 0 END), COUNT(DISTINCT queue_key) FROM {inbox_queue}"
        + " WHERE status IN ('dead', 'parked') GROUP BY consumer ORDER BY consumer");
    this.fencedRelays = tables.render("SELECT subscription, instance, fences, last_fenced_at FROM {relay_instance}"
        + " WHERE fences > 0 ORDER BY last_fenced_at DESC, subscription, instance LIMIT "
        + StoreStatus.MAX_FENCED_RELAYS);
  }

  /** Events written to the log per minute over the last {@code minutes}, oldest first; quiet minutes are absent. */
  public List<StoreStatus.Minute> writtenPerMinute(Transactions tx, int minutes) {
    return tx.inTransaction("counting events per minute", c -> {
      try (PreparedStatement p = c.prepareStatement(writtenPerMinute)) {
        p.setInt(1, minutes);
        List<StoreStatus.Minute> counts = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            counts.add(new StoreStatus.Minute(dialect.getInstant(rs, 1), rs.getLong(2)));
          }
        }
        return counts;
      }
    });
  }

  /**
   * The whole status: the aggregates in one transaction, then each subscription's {@code backlog}
   * and the {@code oldestOpenTransaction}, which the store reads on its own.
   */
  public StoreStatus read(Transactions tx, Function<String, Optional<Backlog>> backlog,
      Supplier<Optional<OpenTransaction>> oldestOpenTransaction) {
    record Snapshot(Map<String, int[]> buckets, Map<String, List<StoreStatus.RelayInstance>> relays,
        List<StoreStatus.StalledBucket> stalled, List<StoreStatus.IdleBucket> idle,
        List<StoreStatus.OutboxDeadLetters> outbox, List<StoreStatus.InboxDeadLetters> inbox,
        Optional<StoreStatus.OutboxPartitions> partitions, List<StoreStatus.FencedRelay> fenced) {}
    Snapshot s = tx.inTransaction("reading the status", c -> new Snapshot(buckets(c), relays(c), stalled(c),
        idle(c), outboxDeadLetters(c), inboxDeadLetters(c), partitions.read(c), fencedRelays(c)));
    Instant now = Instant.now();
    List<StoreStatus.Subscription> subscriptions = new ArrayList<>();
    s.buckets().forEach((name, counts) -> {
      Backlog b = backlog.apply(name).orElse(new Backlog(0, false, Optional.empty()));
      subscriptions.add(new StoreStatus.Subscription(name, b.pending(), b.capped(), b.oldestAge(now),
          s.relays().getOrDefault(name, List.of()), counts[0], counts[1]));
    });
    // No subscription at all: a subscription's backlog then counts the whole log, as its relay will read it.
    Optional<Backlog> waitingForFirstRelay = s.buckets().isEmpty()
        ? backlog.apply(Relay.DEFAULT_SUBSCRIPTION) : Optional.empty();
    // A transaction open for less than a second is the database's ordinary traffic: it holds
    // nothing back that anyone could see, and its query text would only be shown for nothing.
    Optional<OpenTransaction> holding = oldestOpenTransaction.get()
        .filter(t -> t.age().compareTo(StoreStatus.OPEN_TRANSACTION_SHOWN_AFTER) >= 0);
    return new StoreStatus(subscriptions, s.stalled(), s.idle(), s.outbox(), s.inbox(), holding,
        s.partitions(), waitingForFirstRelay, s.fenced());
  }

  /** Each subscription's bucket count and how many of them no live lease holds. */
  private Map<String, int[]> buckets(Connection c) throws SQLException {
    Map<String, int[]> found = new LinkedHashMap<>();
    query(c, buckets, rs -> found.put(rs.getString(1), new int[] {rs.getInt(2), rs.getInt(3)}));
    return found;
  }

  /** The live relay instances of each subscription. */
  private Map<String, List<StoreStatus.RelayInstance>> relays(Connection c) throws SQLException {
    Map<String, List<StoreStatus.RelayInstance>> found = new LinkedHashMap<>();
    query(c, relays, rs -> found.computeIfAbsent(rs.getString(1), s -> new ArrayList<>())
        .add(new StoreStatus.RelayInstance(rs.getString(2), rs.getInt(3), instant(rs, 4))));
    return found;
  }

  private List<StoreStatus.StalledBucket> stalled(Connection c) throws SQLException {
    List<StoreStatus.StalledBucket> found = new ArrayList<>();
    query(c, stalled, rs -> found.add(new StoreStatus.StalledBucket(rs.getString(1), rs.getInt(2), rs.getString(3),
        rs.getInt(4), instant(rs, 5), rs.getString(6))));
    return found;
  }

  private List<StoreStatus.IdleBucket> idle(Connection c) throws SQLException {
    List<StoreStatus.IdleBucket> found = new ArrayList<>();
    query(c, idle, rs -> found.add(new StoreStatus.IdleBucket(rs.getString(1), rs.getInt(2), rs.getString(3),
        instant(rs, 4))));
    return found;
  }

  private List<StoreStatus.OutboxDeadLetters> outboxDeadLetters(Connection c) throws SQLException {
    List<StoreStatus.OutboxDeadLetters> found = new ArrayList<>();
    query(c, outboxDeadLetters, rs -> found.add(
        new StoreStatus.OutboxDeadLetters(rs.getString(1), rs.getLong(2), instant(rs, 3), rs.getString(4))));
    return found;
  }

  private List<StoreStatus.InboxDeadLetters> inboxDeadLetters(Connection c) throws SQLException {
    List<StoreStatus.InboxDeadLetters> found = new ArrayList<>();
    query(c, inboxDeadLetters, rs -> found.add(
        new StoreStatus.InboxDeadLetters(rs.getString(1), rs.getLong(2), rs.getLong(3), rs.getLong(4))));
    return found;
  }

  private List<StoreStatus.FencedRelay> fencedRelays(Connection c) throws SQLException {
    List<StoreStatus.FencedRelay> found = new ArrayList<>();
    query(c, fencedRelays, rs -> found.add(
        new StoreStatus.FencedRelay(rs.getString(1), rs.getString(2), rs.getInt(3), instant(rs, 4))));
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

  private Instant instant(ResultSet rs, int column) throws SQLException {
    return dialect.getInstant(rs, column);
  }
}
