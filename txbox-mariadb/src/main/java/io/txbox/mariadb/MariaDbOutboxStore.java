package io.txbox.mariadb;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.jdbc.DeadLetters;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.Replay;
import io.txbox.jdbc.StoreStatus;
import io.txbox.jdbc.sql.JdbcDeadLetters;
import io.txbox.jdbc.sql.JdbcReplay;
import io.txbox.jdbc.sql.JdbcStatus;
import io.txbox.jdbc.support.Transactions;
import io.txbox.mariadb.internal.MariaDbDialect;
import io.txbox.mariadb.internal.MariaDbJanitorStore;
import io.txbox.mariadb.internal.MariaDbLogKey;
import io.txbox.mariadb.internal.MariaDbMigration;
import io.txbox.mariadb.internal.MariaDbRelayStore;
import io.txbox.mariadb.internal.MariaDbSql;
import io.txbox.mariadb.internal.MariaDbStatus;
import io.txbox.mariadb.internal.MariaDbTables;
import io.txbox.spi.Backlog;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.JanitorStore;
import io.txbox.spi.Membership;
import io.txbox.spi.OpenTransaction;
import io.txbox.spi.StoredMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import javax.sql.DataSource;

/**
 * The outbox on MariaDB 10.6 or later (tested on 10.11; written for MySQL 8 where the SQL allows,
 * untested there): an append-only log in InnoDB, per-bucket checkpoints and leases, dead letters.
 *
 * <pre>{@code
 * MariaDbOutboxStore store = MariaDbOutboxStore.builder(dataSource) // jdbc:mariadb://host/db
 *     .tablePrefix("txbox_")
 *     .build();
 * store.migrate();                        // creates the tables; safe to repeat
 * Outbox outbox = Outbox.create(store);
 * }</pre>
 *
 * <table>
 *   <caption>Store settings and their defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>rule</th></tr>
 *   <tr><td>tablePrefix</td><td>{@value #DEFAULT_TABLE_PREFIX}</td><td>{@code [a-z_][a-z0-9_]*}, at most 20 characters, or empty</td></tr>
 *   <tr><td>buckets</td><td>{@value #DEFAULT_BUCKETS}</td><td>1 to {@value #MAX_BUCKETS}; fixed when the tables are created</td></tr>
 * </table>
 *
 * <p><b>Reading commits safely.</b> InnoDB gives a row its {@code AUTO_INCREMENT} position at
 * insert, not at commit, and has nothing like PostgreSQL's snapshot horizon: a relay that followed
 * positions could pass a row whose transaction commits after a later one, and never send it. So
 * every transaction that writes to the outbox holds a shared lock on a <i>writer epoch</i> (the
 * outbox's insert trigger takes it, for Java and plain-SQL writers alike), and a relay reads only
 * up to a horizon it has proven: it reads the newest committed position, opens a new epoch, and
 * once it can lock every older epoch without waiting, no transaction that could still add a row
 * at or below that position is open. A transaction that wrote no event never holds the relay
 * back; one that wrote an event and stays open holds back the events after it until it ends.
 * Tables live in the database the JDBC URL names; the relay's user needs {@code INSERT} and
 * {@code DELETE} on the epoch table, as on the others.
 *
 * <p>As a {@link JanitorStore}, it deletes relayed events past their retention ({@link
 * io.txbox.Janitor}); several janitors take turns on a row lock. As an {@link OperatorStore} it
 * gives {@code txbox status}, {@code dead-letters}, {@code replay} and the console what they read.
 */
public final class MariaDbOutboxStore implements JdbcOutboxStore {

  /** Default prefix of every table name. */
  public static final String DEFAULT_TABLE_PREFIX = "txbox_";
  /** Default number of buckets the log is split into; the most relay instances that share work. */
  public static final int DEFAULT_BUCKETS = 64;
  /** Most buckets. */
  public static final int MAX_BUCKETS = 1024;

  private final MariaDbTables tables;
  private final MariaDbRelayStore relay;
  private final MariaDbMigration migration;
  private final MariaDbJanitorStore janitor;
  private final MariaDbStatus status;
  private final JdbcStatus statusQueries;
  private final DataSource dataSource;
  private final Transactions tx;

  private MariaDbOutboxStore(Builder b) {
    this.dataSource = b.dataSource;
    this.tx = new Transactions(b.dataSource);
    this.tables = new MariaDbTables(b.tablePrefix);
    this.relay = new MariaDbRelayStore(b.dataSource, tables);
    this.migration = new MariaDbMigration(b.dataSource, tables, b.buckets);
    this.janitor = new MariaDbJanitorStore(b.dataSource, tables);
    this.status = new MariaDbStatus(b.dataSource, tables);
    MariaDbSql sql = MariaDbSql.of(tables);
    this.statusQueries = new JdbcStatus(tables, MariaDbDialect.INSTANCE, sql.idleBuckets(), sql.writtenPerMinute(),
        c -> Optional.empty());
  }

  /** A builder over a pooled {@link DataSource}, with the defaults above. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** The outbox table's name, without the database: {@code txbox_outbox} by default. */
  @Override
  public String outboxTable() {
    return tables.render("{outbox}");
  }

  /** The database the URL names and the outbox table, such as {@code shop.txbox_outbox}. */
  @Override
  public String outboxName() {
    String database = tx.inTransaction("reading the database's name", c -> {
      try (PreparedStatement p = c.prepareStatement("SELECT DATABASE()"); ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    });
    return database + "." + outboxTable();
  }

  /**
   * Creates the tables and the trigger where they are missing; safe to run twice and at once.
   *
   * @return how many schema versions it applied
   */
  @Override
  public int migrate() {
    return migration.run();
  }

  /** {@inheritDoc} One script per version; {@code DELIMITER} lines set off the trigger's body. */
  @Override
  public List<MigrationScript> migrationScripts() {
    return migration.scripts();
  }

  /** {@inheritDoc} MariaDB's outbox is never partitioned, so {@code outboxPartitions} is empty. */
  @Override
  public StoreStatus status(int limitPerBucket) {
    return statusQueries.read(tx,
        subscription -> Optional.of(status.backlog(subscription, limitPerBucket)), status::oldestOpenTransaction);
  }

  @Override
  public List<StoreStatus.Minute> writtenPerMinute(int minutes) {
    if (minutes < 1 || minutes > MAX_MINUTES) {
      throw new IllegalArgumentException("minutes must be between 1 and " + MAX_MINUTES + ", was " + minutes);
    }
    return statusQueries.writtenPerMinute(tx, minutes);
  }

  @Override
  public DeadLetters deadLetters() {
    return new JdbcDeadLetters(dataSource, tables, MariaDbDialect.INSTANCE);
  }

  @Override
  public Replay replay() {
    return new JdbcReplay(dataSource, tables, MariaDbDialect.INSTANCE, MariaDbLogKey.INSTANCE);
  }

  /**
   * What {@link #migrate()} runs, as one script for the {@code mariadb} client, Flyway or
   * Liquibase; {@code DELIMITER} lines set off the trigger's body.
   */
  public String migrationScript() {
    return migration.script();
  }

  @Override
  public void append(Connection transaction, List<Message> messages) throws SQLException {
    relay.append(transaction, messages);
  }

  @Override
  public int openSubscription(String subscription) {
    return relay.openSubscription(subscription);
  }

  @Override
  public Membership heartbeat(String subscription, String instance, Duration lease) {
    return relay.heartbeat(subscription, instance, lease);
  }

  @Override
  public List<BucketState> claimBuckets(String subscription, String instance, int max, Duration lease) {
    return relay.claimBuckets(subscription, instance, max, lease);
  }

  @Override
  public void releaseBuckets(String subscription, String instance, Collection<Integer> released) {
    relay.releaseBuckets(subscription, instance, released);
  }

  @Override
  public void leave(String subscription, String instance) {
    relay.leave(subscription, instance);
  }

  @Override
  public List<StoredMessage> read(String subscription, List<BucketRead> reads) {
    return relay.read(subscription, reads);
  }

  @Override
  public Set<Integer> saveProgress(
      String subscription, String instance, List<BucketProgress> progress, List<DeadLetter> deadLetters) {
    return relay.saveProgress(subscription, instance, progress, deadLetters);
  }

  /** {@inheritDoc} Counts at most {@code limitPerBucket} events per bucket, on the clustered key's range. */
  @Override
  public Optional<Backlog> backlog(String subscription, int limitPerBucket) {
    return Optional.of(status.backlog(subscription, limitPerBucket));
  }

  /**
   * {@inheritDoc}
   *
   * <p>On MariaDB: the oldest other transaction in {@code information_schema.INNODB_TRX} that has
   * modified rows, what the relay's stall warning names; its {@code pid} is the connection id that
   * {@code KILL} takes. Seeing other users' transactions takes the
   * {@code PROCESS} privilege; without it, none is found and the warning stays silent.
   */
  @Override
  public Optional<OpenTransaction> oldestOpenTransaction() {
    return status.oldestOpenTransaction();
  }

  /**
   * {@inheritDoc}
   *
   * <p>Passes over a bucket whose oldest relayed event is within the retention, and otherwise
   * looks at most {@code limit} rows into it, in position order: events kept for the retention are
   * not scanned on every run. Runs at {@code READ COMMITTED}, so that the delete locks no gap a
   * writer inserts into.
   */
  @Override
  public OptionalInt deleteRelayed(Duration retention, int limit) {
    return janitor.deleteRelayed(retention, limit);
  }

  /** {@inheritDoc} Records of messages still queued, dead or parked stay. */
  @Override
  public OptionalInt deleteInboxRecords(Duration retention, int limit) {
    return janitor.deleteInboxRecords(retention, limit);
  }

  /**
   * Settings of a {@link MariaDbOutboxStore}, checked by {@link #build()}.
   *
   * <pre>{@code
   * MariaDbOutboxStore store = MariaDbOutboxStore.builder(dataSource).buckets(128).build();
   * }</pre>
   */
  public static final class Builder {
    private final DataSource dataSource;
    private String tablePrefix = DEFAULT_TABLE_PREFIX;
    private int buckets = DEFAULT_BUCKETS;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
    }

    /** Prefix of every table name; default {@value #DEFAULT_TABLE_PREFIX}. */
    public Builder tablePrefix(String tablePrefix) {
      this.tablePrefix = tablePrefix;
      return this;
    }

    /** How many buckets the log is split into; default {@value #DEFAULT_BUCKETS}. */
    public Builder buckets(int buckets) {
      this.buckets = buckets;
      return this;
    }

    /** The store; refuses settings out of their range, naming the setting and the rule. */
    public MariaDbOutboxStore build() {
      if (buckets < 1 || buckets > MAX_BUCKETS) {
        throw new IllegalArgumentException("buckets must be 1 to " + MAX_BUCKETS + ", was " + buckets);
      }
      return new MariaDbOutboxStore(this);
    }
  }
}
