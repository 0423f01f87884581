package io.txbox.mariadb;

import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.spi.Database;
import io.txbox.jdbc.spi.JdbcJanitorStore;
import io.txbox.jdbc.spi.JdbcOperatorStore;
import io.txbox.jdbc.spi.JdbcStatus;
import io.txbox.mariadb.internal.MariaDbDialect;
import io.txbox.mariadb.internal.MariaDbLogKey;
import io.txbox.mariadb.internal.MariaDbMigration;
import io.txbox.mariadb.internal.MariaDbRelayStore;
import io.txbox.mariadb.internal.MariaDbSql;
import io.txbox.mariadb.internal.MariaDbTables;
import io.txbox.spi.JanitorStore;
import io.txbox.spi.OutboxStore;
import java.util.Objects;
import java.util.Optional;
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
 * Outbox outbox = Outbox.create(store.writer());
 * Relay relay = Relay.builder(store.relay(), publisher).build().start();
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
 * <p>Its {@link #janitor()} deletes relayed events past their retention ({@link
 * io.txbox.Janitor}); several janitors take turns on a row lock. It passes over a bucket whose
 * oldest relayed event is within the retention, and otherwise looks at most a limit of rows into
 * it, in position order, at {@code READ COMMITTED}, so that the delete locks no gap a writer
 * inserts into; inbox records of messages still queued, dead or parked stay. Its
 * {@link #operator()} gives {@code txbox status}, {@code dead-letters}, {@code replay} and
 * the console what they read: its outbox table is named without the database
 * ({@code txbox_outbox} by default), its migration scripts are one per version with
 * {@code DELIMITER} lines around the trigger's body, and its status has no partitions.
 */
public final class MariaDbOutboxStore implements JdbcOutboxStore {

  /** Default prefix of every table name. */
  public static final String DEFAULT_TABLE_PREFIX = Database.Tables.DEFAULT_TABLE_PREFIX;
  /** Default number of buckets the log is split into; the most relay instances that share work. */
  public static final int DEFAULT_BUCKETS = Database.OutboxSettings.DEFAULT_BUCKETS;
  /** Most buckets. */
  public static final int MAX_BUCKETS = MariaDbMigration.MAX_BUCKETS;

  private final MariaDbRelayStore relay;
  private final JanitorStore janitor;
  private final OperatorStore operator;
  private final MariaDbMigration migration;

  private MariaDbOutboxStore(Builder b, MariaDbTables tables, MariaDbRelayStore relay, MariaDbMigration migration) {
    this.relay = relay;
    this.janitor = new JdbcJanitorStore(b.dataSource, MariaDbSql.janitor(tables));
    this.operator = operator(b.dataSource, tables, relay, migration);
    this.migration = migration;
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

  private static OperatorStore operator(DataSource dataSource, MariaDbTables tables, MariaDbRelayStore relay,
      MariaDbMigration migration) {
    MariaDbSql sql = MariaDbSql.of(tables);
    JdbcStatus status = new JdbcStatus(tables, MariaDbDialect.INSTANCE, sql.idleBuckets(), sql.writtenPerMinute(),
        c -> Optional.empty());
    return new JdbcOperatorStore(dataSource, new JdbcOperatorStore.Parts(tables, MariaDbDialect.INSTANCE,
        MariaDbLogKey.INSTANCE, tables.render("{outbox}"), status, relay, migration));
  }

  /** A builder over a pooled {@link DataSource}, with the defaults above. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * What {@link #migrate()} runs, as one script for the {@code mariadb} client, Flyway or
   * Liquibase; {@code DELIMITER} lines set off the trigger's body.
   */
  public String migrationScript() {
    return migration.script();
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
      MariaDbTables tables = new MariaDbTables(tablePrefix);
      MariaDbMigration migration = MariaDbMigration.of(tables, buckets); // checks the bucket count
      return new MariaDbOutboxStore(this, tables, new MariaDbRelayStore(dataSource, tables), migration);
    }
  }
}
