package io.txbox.jdbc;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.jdbc.internal.JanitorLock;
import io.txbox.jdbc.internal.OutboxPartitions;
import io.txbox.jdbc.internal.PostgresListener;
import io.txbox.jdbc.internal.PostgresMigration;
import io.txbox.jdbc.internal.PostgresRows;
import io.txbox.jdbc.internal.PostgresSettings;
import io.txbox.jdbc.internal.PostgresSql;
import io.txbox.jdbc.internal.PostgresTables;
import io.txbox.jdbc.internal.StatusQueries;
import io.txbox.jdbc.internal.Transactions;
import io.txbox.spi.Backlog;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.JanitorStore;
import io.txbox.spi.Membership;
import io.txbox.spi.OpenTransaction;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.StoredMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.postgresql.PGStatement;

/**
 * The outbox on PostgreSQL 13 or later: an append-only log read in commit-safe {@code (tx_id,
 * position)} order, per-bucket checkpoints and leases, dead letters, {@code LISTEN/NOTIFY}
 * wake-up, and the deletes a {@link io.txbox.Janitor} runs on the outbox and inbox tables.
 *
 * <pre>{@code
 * PostgresOutboxStore store = PostgresOutboxStore.builder(dataSource) // a pooled DataSource
 *     .schema("public")
 *     .tablePrefix("txbox_")
 *     .build();
 * store.migrate();                       // creates or upgrades the tables; safe to repeat
 * Outbox outbox = Outbox.create(store);
 * }</pre>
 *
 * <table>
 *   <caption>Store settings and their defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>rule</th></tr>
 *   <tr><td>schema</td><td>{@value #DEFAULT_SCHEMA}</td><td>{@code [a-z_][a-z0-9_]*}, at most 30 characters</td></tr>
 *   <tr><td>tablePrefix</td><td>{@value #DEFAULT_TABLE_PREFIX}</td><td>{@code [a-z_][a-z0-9_]*}, at most 20 characters, or empty</td></tr>
 *   <tr><td>buckets</td><td>{@value #DEFAULT_BUCKETS}</td><td>1 to {@value #MAX_BUCKETS}; fixed when the tables are created</td></tr>
 *   <tr><td>notifyOnAppend</td><td>{@code true}</td><td>whether {@code append} sends {@code NOTIFY} to wake relays</td></tr>
 *   <tr><td>notifyInterval</td><td>10 ms</td><td>0 to 1 minute: least time between two NOTIFYs of this store</td></tr>
 *   <tr><td>listen</td><td>{@code true}</td><td>whether a relay holds a connection in {@code LISTEN} to be woken early</td></tr>
 *   <tr><td>outboxPartitionSize</td><td>0 (a plain table)</td><td>0, or {@value #MIN_PARTITION_SIZE} to {@value #MAX_PARTITION_SIZE} positions per partition; {@link #migrate()} partitions the outbox</td></tr>
 *   <tr><td>partitionsAhead</td><td>{@value #DEFAULT_PARTITIONS_AHEAD}</td><td>1 to 100 empty partitions the janitor keeps ahead of the writers</td></tr>
 *   <tr><td>partitionLockTimeout</td><td>100 ms</td><td>1 ms to 10 s: longest wait for the outbox's lock to create or drop a partition</td></tr>
 * </table>
 *
 * <p><b>A partitioned outbox</b> ({@link Builder#outboxPartitionSize}) is cleaned by dropping
 * whole partitions: the table holds the retention window and the partitions ahead, and leaves no
 * dead rows for vacuum. A partition is dropped once every position in it has been handed out, its
 * newest row is older than the retention, and every subscription relayed all of it, checked under
 * an {@code ACCESS EXCLUSIVE} lock on the outbox that writers wait behind for at most
 * {@code partitionLockTimeout}. Rows no partition covers (the janitor did not run) land in a
 * default partition and are relayed and deleted as usual. Choose it for sustained load (hundreds
 * of events per second and more) and when vacuum cannot keep up; size a partition to hold minutes
 * to hours of writes. {@link #migrate()} converts an existing outbox in place, keeping its rows,
 * under an exclusive lock for as long as two scans of the table take.
 */
public final class PostgresOutboxStore implements OutboxStore, JanitorStore {

  /** Default schema. */
  public static final String DEFAULT_SCHEMA = "public";
  /** Default prefix of every table name. */
  public static final String DEFAULT_TABLE_PREFIX = "txbox_";
  /** Default number of buckets the log is split into; the most relay instances that share work. */
  public static final int DEFAULT_BUCKETS = 64;
  /** Most buckets. */
  public static final int MAX_BUCKETS = 1024;
  /** Default least time between two NOTIFYs from one store. */
  public static final Duration DEFAULT_NOTIFY_INTERVAL = Duration.ofMillis(10);
  /** Fewest positions per outbox partition. */
  public static final long MIN_PARTITION_SIZE = 1_000;
  /** Most positions per outbox partition. */
  public static final long MAX_PARTITION_SIZE = 1_000_000_000;
  /** Default empty partitions kept ahead of the writers. */
  public static final int DEFAULT_PARTITIONS_AHEAD = 2;
  /** Default longest wait for the outbox's lock to create or drop a partition. */
  public static final Duration DEFAULT_PARTITION_LOCK_TIMEOUT = Duration.ofMillis(100);

  private final DataSource dataSource;
  private final PostgresTables tables;
  private final PostgresSql sql;
  private final int buckets;
  private final boolean notifyOnAppend;
  private final long notifyIntervalNanos;
  private final AtomicLong lastNotify = new AtomicLong(System.nanoTime() - Long.MAX_VALUE / 2);
  private final boolean listen;
  private final Transactions tx;
  private final StatusQueries status;
  private final long partitionSize;
  private final int partitionsAhead;
  private final OutboxPartitions partitions;
  private final String deleteRelayedFromDefault;
  private final JanitorLock janitorLock;
  private volatile boolean partitioned;

  private PostgresOutboxStore(Builder b) {
    this.dataSource = b.dataSource;
    this.tables = new PostgresTables(b.schema, b.tablePrefix);
    this.sql = PostgresSql.of(tables);
    this.buckets = b.buckets;
    this.notifyOnAppend = b.notifyOnAppend;
    this.notifyIntervalNanos = b.notifyInterval.toNanos();
    this.listen = b.listen;
    this.tx = new Transactions(dataSource);
    this.status = new StatusQueries(tables);
    this.partitionSize = b.outboxPartitionSize;
    this.partitionsAhead = b.partitionsAhead;
    this.partitions = new OutboxPartitions(tables, tx, b.partitionsAhead, b.partitionLockTimeout);
    this.deleteRelayedFromDefault = PostgresSql.deleteRelayedFrom(tables, partitions.defaultPartition());
    this.janitorLock = new JanitorLock(tables, tx);
  }

  /** A builder over a pooled {@link DataSource}, with the defaults above. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * Creates or upgrades the tables; safe to run twice and from several instances at once. With an
   * {@link Builder#outboxPartitionSize outboxPartitionSize}, also partitions the outbox.
   */
  public int migrate() {
    return migration().run();
  }

  private PostgresMigration migration() {
    return new PostgresMigration(dataSource, tables, buckets, partitionSize, partitionsAhead);
  }

  /**
   * What {@link #migrate()} runs, as SQL for Flyway, Liquibase or a DBA, with this store's schema,
   * table prefix and bucket count filled in. Reads no database.
   */
  public List<MigrationScript> migrationScripts() {
    return migration().scripts();
  }

  /** The schema of this store's tables. */
  public String schema() {
    return tables.schema();
  }

  /** The prefix of this store's table names. */
  public String tablePrefix() {
    return tables.prefix();
  }

  /** The qualified name of the outbox table, for writers that insert with plain SQL. */
  public String outboxTable() {
    return tables.outbox();
  }

  /**
   * The outbox as the meters' {@code outbox} tag names it: database, schema and table, such as
   * {@code shop.public.txbox_outbox}. Asks the database for its name.
   */
  public String outboxName() {
    String database = tx.inTransaction("reading the database's name", c -> {
      try (PreparedStatement p = c.prepareStatement("SELECT current_database()"); ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    });
    return database + "." + tables.schema() + "." + tables.prefix() + "outbox";
  }

  @Override
  public void append(Connection transaction, List<Message> messages) throws SQLException {
    try (PreparedStatement insert = transaction.prepareStatement(sql.append())) {
      for (Message m : messages) {
        PostgresRows.bindAppend(insert, transaction, m);
        if (messages.size() > 1) {
          insert.addBatch();
        }
      }
      if (messages.size() > 1) {
        insert.executeBatch();
      } else {
        insert.executeUpdate();
      }
    } catch (SQLException e) {
      throw tables.explainMissing(e);
    }
    if (notifyOnAppend && notifyDue()) {
      try (PreparedStatement notify = transaction.prepareStatement(sql.wakeRelays())) {
        notify.setString(1, tables.channel());
        notify.execute();
      }
    }
  }

  /**
   * Whether this append should send a NOTIFY. Every notifying transaction takes PostgreSQL's
   * global notification lock through its commit, so notifying commits run one at a time; sending
   * at most one per interval keeps that cost off busy writers, while an idle relay is still woken
   * by the first commit and a busy one re-polls within milliseconds anyway.
   */
  private boolean notifyDue() {
    long now = System.nanoTime();
    long last = lastNotify.get();
    return now - last >= notifyIntervalNanos && lastNotify.compareAndSet(last, now);
  }

  @Override
  public int openSubscription(String subscription) {
    return tx.inTransaction("opening subscription " + subscription, c -> {
      int count = PostgresSettings.bucketCount(c, tables);
      try (PreparedStatement p = c.prepareStatement(sql.createBuckets())) {
        p.setString(1, subscription);
        p.setInt(2, count);
        p.executeUpdate();
      }
      return count;
    });
  }

  @Override
  public Membership heartbeat(String subscription, String instance, Duration lease) {
    return tx.inTransaction("heartbeat of " + instance, c -> {
      try (PreparedStatement touch = c.prepareStatement(sql.touchInstance());
          PreparedStatement forget = c.prepareStatement(sql.forgetDeadInstances())) {
        touch.setString(1, subscription);
        touch.setString(2, instance);
        touch.setLong(3, lease.toMillis());
        touch.executeUpdate();
        forget.setString(1, subscription);
        forget.executeUpdate();
      }
      List<String> live = new ArrayList<>();
      try (PreparedStatement p = c.prepareStatement(sql.liveInstances())) {
        p.setString(1, subscription);
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            live.add(rs.getString(1));
          }
        }
      }
      Set<Integer> owned = new HashSet<>();
      try (PreparedStatement p = c.prepareStatement(sql.renewLeases())) {
        p.setLong(1, lease.toMillis());
        p.setString(2, subscription);
        p.setString(3, instance);
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            owned.add(rs.getInt(1));
          }
        }
      }
      return new Membership(live, owned);
    });
  }

  @Override
  public List<BucketState> claimBuckets(String subscription, String instance, int max, Duration lease) {
    return tx.inTransaction("claiming buckets for " + instance, c -> {
      try (PreparedStatement p = c.prepareStatement(sql.claimBuckets())) {
        p.setString(1, instance);
        p.setLong(2, lease.toMillis());
        p.setString(3, subscription);
        p.setString(4, subscription);
        p.setInt(5, max);
        List<BucketState> claimed = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            claimed.add(PostgresRows.bucketState(rs));
          }
        }
        return claimed;
      }
    });
  }

  @Override
  public void releaseBuckets(String subscription, String instance, Collection<Integer> released) {
    tx.inTransaction("releasing buckets of " + instance, c -> {
      try (PreparedStatement p = c.prepareStatement(sql.releaseBuckets())) {
        p.setString(1, subscription);
        p.setString(2, instance);
        p.setArray(3, c.createArrayOf("int4", released.toArray(Integer[]::new)));
        return p.executeUpdate();
      }
    });
  }

  @Override
  public void leave(String subscription, String instance) {
    tx.inTransaction("leaving subscription " + subscription, c -> {
      try (PreparedStatement release = c.prepareStatement(sql.releaseAll());
          PreparedStatement remove = c.prepareStatement(sql.removeInstance())) {
        release.setString(1, subscription);
        release.setString(2, instance);
        release.executeUpdate();
        remove.setString(1, subscription);
        remove.setString(2, instance);
        return remove.executeUpdate();
      }
    });
  }

  @Override
  public List<StoredMessage> read(String subscription, List<BucketRead> reads) {
    return tx.inTransaction("reading the outbox", c -> {
      try (PreparedStatement p = c.prepareStatement(sql.read())) {
        // Server-prepared from the first execution, so payloads and times arrive in binary
        // rather than as hex and text that the driver must parse.
        p.unwrap(PGStatement.class).setPrepareThreshold(-1);
        PostgresRows.bindReads(p, c, reads);
        List<StoredMessage> rows = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            rows.add(PostgresRows.storedMessage(rs));
          }
        }
        return rows;
      }
    });
  }

  @Override
  public Set<Integer> saveProgress(
      String subscription, String instance, List<BucketProgress> progress, List<DeadLetter> deadLetters) {
    if (progress.isEmpty()) {
      return Set.of();
    }
    return tx.inTransaction("saving checkpoints", c -> {
      Set<Integer> saved = new HashSet<>();
      try (PreparedStatement p = c.prepareStatement(sql.saveProgress())) {
        PostgresRows.bindProgress(p, c, progress);
        p.setString(7, subscription);
        p.setString(8, instance);
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            saved.add(rs.getInt(1));
          }
        }
      }
      insertDeadLetters(c, deadLetters.stream().filter(d -> saved.contains(d.bucket())).toList());
      Set<Integer> lost = new TreeSet<>();
      progress.forEach(p -> lost.add(p.bucket()));
      lost.removeAll(saved);
      return lost;
    });
  }

  private void insertDeadLetters(Connection c, List<DeadLetter> letters) throws SQLException {
    if (letters.isEmpty()) {
      return;
    }
    try (PreparedStatement p = c.prepareStatement(sql.deadLetter())) {
      for (DeadLetter d : letters) {
        p.setString(1, d.subscription());
        p.setString(2, d.error());
        p.setInt(3, d.attempts());
        p.setInt(4, d.bucket());
        p.setString(5, Long.toUnsignedString(d.position().txId()));
        p.setLong(6, d.position().position());
        p.addBatch();
      }
      p.executeBatch();
    }
  }

  /**
   * Writes dead letters that carry their whole event, for relays that read events from elsewhere
   * than the outbox table (logical decoding); a letter already saved for the same subscription
   * and position is kept as it is.
   */
  public void saveDeadLetterCopies(List<DeadLetter> letters) {
    if (letters.isEmpty()) {
      return;
    }
    tx.inTransaction("saving dead letters", c -> {
      try (PreparedStatement p = c.prepareStatement(sql.deadLetterCopy())) {
        for (DeadLetter d : letters) {
          PostgresRows.bindDeadLetterCopy(p, c, d);
          p.addBatch();
        }
        return p.executeBatch().length;
      }
    });
  }

  @Override
  public AutoCloseable listen(Runnable onAppend) {
    if (!listen) {
      return () -> {};
    }
    return new PostgresListener(dataSource, tables.channel(), onAppend);
  }

  @Override
  public Optional<OpenTransaction> oldestOpenTransaction() {
    return tx.inTransaction("looking up the oldest open transaction", c -> {
      try (PreparedStatement p = c.prepareStatement(sql.oldestOpenTransaction());
          ResultSet rs = p.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        return Optional.of(new OpenTransaction(rs.getInt(1), Duration.ofMillis(rs.getLong(2)), rs.getString(3),
            rs.getString(4), rs.getString(5), rs.getString(6), rs.getString(7)));
      }
    });
  }

  /** The dead letters of this outbox, for operators: list, show, retry and discard, audited. */
  public PostgresDeadLetters deadLetters() {
    return new PostgresDeadLetters(dataSource, tables);
  }

  /** Replays of events still in this outbox's log, by scope and at a bounded rate, audited. */
  public PostgresReplay replay() {
    return new PostgresReplay(dataSource, tables);
  }

  /**
   * Every subscription's backlog and relays, the stalled buckets, the dead letters of the outbox
   * and the inbox, and the oldest open transaction: what {@code txbox status} prints. Counting
   * stops at {@code limitPerBucket} events per bucket, as {@link #backlog} does.
   */
  public StoreStatus status(int limitPerBucket) {
    return status.read(tx, subscription -> backlog(subscription, limitPerBucket), this::oldestOpenTransaction);
  }

  /** Most minutes {@link #writtenPerMinute} looks back. */
  public static final int MAX_MINUTES = 24 * 60;

  /**
   * Events written per minute over the last {@code minutes} (1 to {@value #MAX_MINUTES}), oldest
   * first, counted from the log: events the janitor already removed are not counted.
   */
  public List<StoreStatus.Minute> writtenPerMinute(int minutes) {
    if (minutes < 1 || minutes > MAX_MINUTES) {
      throw new IllegalArgumentException("minutes must be between 1 and " + MAX_MINUTES + ", was " + minutes);
    }
    return status.writtenPerMinute(tx, minutes);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Counts committed events past each bucket's checkpoint, delayed ones included; before any
   * relay opened the subscription, every event in the log is pending for it, since its relay will
   * start at the beginning of the log.
   */
  @Override
  public Optional<Backlog> backlog(String subscription, int limitPerBucket) {
    if (limitPerBucket < 1) {
      throw new IllegalArgumentException("limitPerBucket must be at least 1, was " + limitPerBucket);
    }
    return tx.inTransaction("counting the backlog of subscription " + subscription, c -> {
      try (PreparedStatement p = c.prepareStatement(sql.backlog())) {
        p.setInt(1, limitPerBucket);
        p.setString(2, subscription);
        p.setString(3, subscription);
        p.setInt(4, limitPerBucket);
        try (ResultSet rs = p.executeQuery()) {
          rs.next();
          Timestamp oldest = rs.getTimestamp(2);
          return Optional.of(new Backlog(
              rs.getLong(1), rs.getBoolean(3), Optional.ofNullable(oldest).map(Timestamp::toInstant)));
        }
      }
    });
  }

  /**
   * {@inheritDoc}
   *
   * <p>On a partitioned outbox, also creates partitions ahead of the writers and drops whole
   * partitions that may go; their rows count in the result, which may then exceed {@code limit}.
   */
  @Override
  public OptionalInt deleteRelayed(Duration retention, int limit) {
    if (isPartitioned()) {
      return partitions.clean(retention, limit, deleteRelayedFromDefault);
    }
    return underJanitorLock("deleting relayed outbox events", sql.deleteRelayed(), p -> {
      p.setLong(1, retention.toMillis());
      p.setInt(2, limit);
      p.setInt(3, limit);
    });
  }

  /** Whether the outbox is partitioned; once it is, it stays so. */
  private boolean isPartitioned() {
    if (!partitioned) {
      partitioned = tx.inTransaction("reading the outbox's layout", c -> OutboxPartitions.isPartitioned(c, tables));
    }
    return partitioned;
  }

  /** The outbox's partitions, oldest first and the default partition last; empty for a plain table. */
  public List<String> outboxPartitions() {
    return isPartitioned() ? partitions.names() : List.of();
  }

  @Override
  public OptionalInt deleteInboxRecords(Duration retention, int limit) {
    return underJanitorLock("deleting old inbox records", sql.deleteInboxRecords(), p -> {
      p.setLong(1, retention.toMillis());
      p.setInt(2, limit);
    });
  }

  /** Parameters of a statement. */
  @FunctionalInterface
  private interface Binder {
    void bind(PreparedStatement statement) throws SQLException;
  }

  /** Runs one delete in its own transaction, or nothing when another janitor holds the lock. */
  private OptionalInt underJanitorLock(String what, String delete, Binder binder) {
    return janitorLock.run(what, c -> {
      try (PreparedStatement p = c.prepareStatement(delete)) {
        binder.bind(p);
        return p.executeUpdate();
      }
    });
  }

  /** Builds a {@link PostgresOutboxStore}; {@link #build()} checks every setting. */
  public static final class Builder {
    private final DataSource dataSource;
    private String schema = DEFAULT_SCHEMA;
    private String tablePrefix = DEFAULT_TABLE_PREFIX;
    private int buckets = DEFAULT_BUCKETS;
    private boolean notifyOnAppend = true;
    private Duration notifyInterval = DEFAULT_NOTIFY_INTERVAL;
    private boolean listen = true;
    private long outboxPartitionSize;
    private int partitionsAhead = DEFAULT_PARTITIONS_AHEAD;
    private Duration partitionLockTimeout = DEFAULT_PARTITION_LOCK_TIMEOUT;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
    }

    /** The schema of the tables. Default {@value #DEFAULT_SCHEMA}. */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The prefix of every table name. Default {@value #DEFAULT_TABLE_PREFIX}. */
    public Builder tablePrefix(String tablePrefix) {
      this.tablePrefix = tablePrefix;
      return this;
    }

    /** Buckets to create the log with; only {@link #migrate()} uses it. Default {@value #DEFAULT_BUCKETS}. */
    public Builder buckets(int buckets) {
      this.buckets = buckets;
      return this;
    }

    /**
     * Whether {@code append} sends a {@code NOTIFY} (at most one per {@link #notifyInterval}) that
     * wakes an idle relay at once, instead of the event waiting for the relay's next poll. Default
     * true.
     */
    public Builder notifyOnAppend(boolean notifyOnAppend) {
      this.notifyOnAppend = notifyOnAppend;
      return this;
    }

    /**
     * Least time between two NOTIFYs sent by this store's appends. Default 10 ms; zero notifies
     * on every append, which serialises the commits of notifying transactions.
     */
    public Builder notifyInterval(Duration notifyInterval) {
      this.notifyInterval = notifyInterval;
      return this;
    }

    /** Whether a relay on this store holds a connection in {@code LISTEN} to be woken early. Default true. */
    public Builder listen(boolean listen) {
      this.listen = listen;
      return this;
    }

    /**
     * Positions per outbox partition: {@link #migrate()} partitions the outbox (keeping its rows)
     * and the janitor drops whole partitions instead of deleting rows. Default 0: a plain table,
     * or, once partitioned, the size it was partitioned with. Changing it applies to partitions
     * created from then on. Otherwise {@value #MIN_PARTITION_SIZE} to {@value #MAX_PARTITION_SIZE}.
     */
    public Builder outboxPartitionSize(long outboxPartitionSize) {
      this.outboxPartitionSize = outboxPartitionSize;
      return this;
    }

    /** Empty partitions the janitor keeps ahead of the writers, 1 to 100. Default {@value #DEFAULT_PARTITIONS_AHEAD}. */
    public Builder partitionsAhead(int partitionsAhead) {
      this.partitionsAhead = partitionsAhead;
      return this;
    }

    /**
     * Longest wait for the outbox's lock to create or drop a partition, 1 ms to 10 s; writers
     * queue behind the waiting janitor that long at worst, and a janitor that does not get the
     * lock tries again next run. Default 100 ms.
     */
    public Builder partitionLockTimeout(Duration partitionLockTimeout) {
      this.partitionLockTimeout = partitionLockTimeout;
      return this;
    }

    /** Checks the settings and builds the store. */
    public PostgresOutboxStore build() {
      if (outboxPartitionSize != 0
          && (outboxPartitionSize < MIN_PARTITION_SIZE || outboxPartitionSize > MAX_PARTITION_SIZE)) {
        throw new IllegalArgumentException("outboxPartitionSize must be 0 (a plain table) or >= "
            + MIN_PARTITION_SIZE + " and <= " + MAX_PARTITION_SIZE + ", was " + outboxPartitionSize);
      }
      if (partitionsAhead < 1 || partitionsAhead > 100) {
        throw new IllegalArgumentException("partitionsAhead must be >= 1 and <= 100, was " + partitionsAhead);
      }
      if (partitionLockTimeout == null || partitionLockTimeout.compareTo(Duration.ofMillis(1)) < 0
          || partitionLockTimeout.compareTo(Duration.ofSeconds(10)) > 0) {
        throw new IllegalArgumentException(
            "partitionLockTimeout must be >= 1 ms and <= 10 s, was " + partitionLockTimeout);
      }
      if (notifyInterval == null || notifyInterval.isNegative() || notifyInterval.compareTo(Duration.ofMinutes(1)) > 0) {
        throw new IllegalArgumentException(
            "notifyInterval must be >= 0 and <= 1 minute, was " + notifyInterval);
      }
      if (buckets < 1 || buckets > MAX_BUCKETS) {
        throw new IllegalArgumentException(
            "buckets must be >= 1 and <= " + MAX_BUCKETS + ", was " + buckets);
      }
      return new PostgresOutboxStore(this);
    }
  }
}
