package io.txbox.postgres;

import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.spi.Database;
import io.txbox.jdbc.spi.Transactions;
import io.txbox.postgres.internal.PostgresJanitorStore;
import io.txbox.postgres.internal.PostgresMigration;
import io.txbox.postgres.internal.PostgresOperatorStore;
import io.txbox.postgres.internal.PostgresRelayStore;
import io.txbox.spi.DeadLetterSink;
import io.txbox.spi.JanitorStore;
import io.txbox.spi.OutboxStore;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

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
 * Outbox outbox = Outbox.create(store.writer());
 * Relay relay = Relay.builder(store.relay(), publisher).build().start();
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
 *   <tr><td>listenDataSource</td><td>the store's</td><td>where that connection comes from: a direct or session-pooled one behind a transaction pooler</td></tr>
 *   <tr><td>idleTransactionTimeout</td><td>none</td><td>1 ms to 1 hour: how long a relay transaction that locks rows may sit idle before the server ends it</td></tr>
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
 *
 * <p><b>Parts handed out.</b> Writers take its {@link #writer()}, relays and the backlog meters
 * its {@link #relay()}, the {@link io.txbox.Janitor} its {@link #janitor()}, and operators' tools
 * (status, dead letters, replay, migration, the console) its {@link #operator()}; each part is its
 * own class over the same tables, and this one holds the settings. The backlog counts committed
 * events past each bucket's checkpoint, delayed ones included; before any relay opened a
 * subscription, every event in the log is pending for it, since its relay will start at the
 * beginning of the log. On a partitioned outbox, the janitor's {@code deleteRelayed} also creates
 * partitions ahead of the writers and drops whole partitions that may go (their rows count in its
 * result, which may then exceed its limit), and {@link #migrate()} partitions the outbox.
 */
public final class PostgresOutboxStore implements JdbcOutboxStore {

  /** Default schema. */
  public static final String DEFAULT_SCHEMA = Database.Tables.DEFAULT_SCHEMA;
  /** Default prefix of every table name. */
  public static final String DEFAULT_TABLE_PREFIX = Database.Tables.DEFAULT_TABLE_PREFIX;
  /** Default number of buckets the log is split into; the most relay instances that share work. */
  public static final int DEFAULT_BUCKETS = Database.OutboxSettings.DEFAULT_BUCKETS;
  /** Most buckets. */
  public static final int MAX_BUCKETS = PostgresMigration.MAX_BUCKETS;
  /** Default least time between two NOTIFYs from one store. */
  public static final Duration DEFAULT_NOTIFY_INTERVAL = Duration.ofMillis(10);
  /** Fewest positions per outbox partition. */
  public static final long MIN_PARTITION_SIZE = PostgresMigration.MIN_PARTITION_SIZE;
  /** Most positions per outbox partition. */
  public static final long MAX_PARTITION_SIZE = PostgresMigration.MAX_PARTITION_SIZE;
  /** Default empty partitions kept ahead of the writers. */
  public static final int DEFAULT_PARTITIONS_AHEAD = Database.OutboxSettings.DEFAULT_PARTITIONS_AHEAD;
  /** Default longest wait for the outbox's lock to create or drop a partition. */
  public static final Duration DEFAULT_PARTITION_LOCK_TIMEOUT = Duration.ofMillis(100);

  private final PostgresTables tables;
  private final PostgresRelayStore relay;
  private final PostgresJanitorStore janitor;
  private final OperatorStore operator;

  private PostgresOutboxStore(Parts parts) {
    this.tables = parts.tables();
    this.relay = parts.relay();
    this.janitor = parts.janitor();
    this.operator = parts.operator();
  }

  /** The store's parts, built from its settings. */
  private record Parts(PostgresTables tables, PostgresRelayStore relay, PostgresJanitorStore janitor,
      OperatorStore operator) {
    static Parts of(Builder b) {
      PostgresTables tables = new PostgresTables(b.schema, b.tablePrefix);
      PostgresRelayStore relay = new PostgresRelayStore(b.dataSource, tables, b.notifyOnAppend, b.notifyInterval,
          b.listen ? (b.listenDataSource != null ? b.listenDataSource : b.dataSource) : null,
          b.idleTransactionTimeout);
      PostgresJanitorStore janitor = new PostgresJanitorStore(tables, new Transactions(b.dataSource),
          b.partitionsAhead, b.partitionLockTimeout);
      PostgresMigration migration = PostgresMigration.of(tables, b.buckets, b.outboxPartitionSize, b.partitionsAhead);
      return new Parts(tables, relay, janitor, PostgresOperatorStore.create(b.dataSource, tables, relay, migration));
    }
  }

  /** A builder over a pooled {@link DataSource}, with the defaults above. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  @Override
  public OutboxStore relay() {
    return relay;
  }

  @Override
  public JanitorStore janitor() {
    return janitor;
  }

  @Override
  public OperatorStore operator() {
    return operator;
  }

  /**
   * Where the logical relay keeps a copy of each dead letter it sends, in this store's
   * dead-letter table: the relay part, which the table relay dead-letters through too.
   */
  public DeadLetterSink deadLetterSink() {
    return relay;
  }

  /** The names of this store's tables, for code that reads them beside the store. */
  public PostgresTables tables() {
    return tables;
  }

  /** The schema of this store's tables. */
  public String schema() {
    return tables.schema();
  }

  /** The prefix of this store's table names. */
  public String tablePrefix() {
    return tables.prefix();
  }

  /** The outbox's partitions, oldest first and the default partition last; empty for a plain table. */
  public List<String> outboxPartitions() {
    return janitor.outboxPartitions();
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
    private DataSource listenDataSource;
    private Duration idleTransactionTimeout;
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
     * Where a relay's {@code LISTEN} connection comes from. Default: the store's data source. A
     * connection pooler that lends server connections per transaction (PgBouncer in transaction
     * mode, RDS Proxy) cannot deliver notifications, which reach the server connection that
     * listened, not the client: give one that reaches PostgreSQL directly or through session
     * pooling, such as {@code org.postgresql.ds.PGSimpleDataSource}. The relay holds one
     * connection of it and opens another only when that one breaks.
     */
    public Builder listenDataSource(DataSource listenDataSource) {
      this.listenDataSource = Objects.requireNonNull(listenDataSource, "listenDataSource must not be null");
      return this;
    }

    /**
     * How long a relay transaction that locks rows (leases, checkpoints) may sit idle before the
     * server ends it ({@code idle_in_transaction_session_timeout}, set with {@code SET LOCAL} in
     * each such transaction, so that it holds through any connection pooler and reaches no other
     * client). A relay frozen mid-transaction would otherwise keep its row locks, and the other
     * relays, which skip locked rows, would stay off its buckets until it woke. {@code txbox
     * relay} sets the lease duration. Default: none, the server's setting.
     */
    public Builder idleTransactionTimeout(Duration idleTransactionTimeout) {
      this.idleTransactionTimeout = idleTransactionTimeout;
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
      if (partitionLockTimeout == null || partitionLockTimeout.compareTo(Duration.ofMillis(1)) < 0
          || partitionLockTimeout.compareTo(Duration.ofSeconds(10)) > 0) {
        throw new IllegalArgumentException(
            "partitionLockTimeout must be >= 1 ms and <= 10 s, was " + partitionLockTimeout);
      }
      if (notifyInterval == null || notifyInterval.isNegative() || notifyInterval.compareTo(Duration.ofMinutes(1)) > 0) {
        throw new IllegalArgumentException(
            "notifyInterval must be >= 0 and <= 1 minute, was " + notifyInterval);
      }
      if (idleTransactionTimeout != null && (idleTransactionTimeout.compareTo(Duration.ofMillis(1)) < 0
          || idleTransactionTimeout.compareTo(Duration.ofHours(1)) > 0)) {
        throw new IllegalArgumentException(
            "idleTransactionTimeout must be >= 1 ms and <= 1 hour, was " + idleTransactionTimeout);
      }
      return new PostgresOutboxStore(Parts.of(this)); // the migration checks the buckets and partitions
    }
  }
}
