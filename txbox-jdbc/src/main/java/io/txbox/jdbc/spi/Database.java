package io.txbox.jdbc.spi;

import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.OperatorStore;
import io.txbox.spi.InboxStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import javax.sql.DataSource;

/**
 * A database txbox keeps its tables in, as the front ends (the {@code txbox} command, the Spring
 * Boot starter, the demo) see it: its name, the URLs that are its, what it can do, and the stores
 * they build from settings. Each database module provides one through {@link ServiceLoader}
 * ({@code META-INF/services/io.txbox.jdbc.spi.Database}), so that a front end chooses by the JDBC
 * URL instead of naming databases. An application builds its database module's store instead
 * ({@code PostgresOutboxStore.builder(dataSource)}).
 *
 * <pre>{@code
 * Database database = Database.forUrl("jdbc:mariadb://db:3306/shop").orElseThrow();
 * if (!database.has(Database.Capability.SCHEMAS)) { ... } // the URL's database holds the tables
 * OperatorStore store = database.operatorStore(dataSource, new Database.Tables("public", "txbox_"));
 * }</pre>
 */
public interface Database {

  /**
   * What a database can do beyond what every txbox database does. A front end refuses a setting
   * that needs a capability the URL's database lacks, quoting {@link Database#lacks}.
   */
  enum Capability {
    /** The tables live in a schema the user names; without it, in the database the URL names. */
    SCHEMAS("schemas for its tables", ""),
    /** The database wakes a relay when events commit ({@code LISTEN/NOTIFY}). */
    NOTIFY("LISTEN/NOTIFY", "relays poll"),
    /** The outbox can be partitioned by time, and the janitor drops whole partitions. */
    PARTITIONS("outbox partitions", ""),
    /** Logical decoding: the logical relay, WAL messages and replication slots. */
    LOGICAL_DECODING("logical decoding", "use the table relay"),
    /**
     * txbox can tell when a pooler lends server connections per transaction ({@link #sessionIdQuery}),
     * and then gives the pool the driver's {@link #perTransactionPoolerProperties}.
     */
    POOLER_DETECTION("a check for poolers that lend connections per transaction", "");

    private final String what;
    private final String instead;

    Capability(String what, String instead) {
      this.what = what;
      this.instead = instead;
    }

    /** What it is, in a few words, as a refusal names it. */
    public String what() {
      return what;
    }

    /** What a user does instead on a database without it, or empty. */
    public String instead() {
      return instead;
    }
  }

  /**
   * Where the txbox tables are.
   *
   * @param schema the schema, for a database with {@link Capability#SCHEMAS}; ignored otherwise
   * @param tablePrefix the prefix of every table name, such as {@code txbox_}
   */
  record Tables(String schema, String tablePrefix) {
    /** The schema, where a database has them, when none is named. */
    public static final String DEFAULT_SCHEMA = "public";
    /** The prefix of every table name when none is named. */
    public static final String DEFAULT_TABLE_PREFIX = "txbox_";
  }

  /**
   * What a table outbox is built with. A front end refuses, by capability and by name, the
   * settings a database lacks before it builds; {@link #outboxStore} refuses them again.
   *
   * @param tables where the tables are
   * @param buckets the outbox's bucket count
   * @param listen whether relays are woken when events commit ({@link Capability#NOTIFY})
   * @param listenDataSource where the listening connection comes from; null for the store's own
   * @param idleTransactionTimeout how long a relay transaction that locks rows may sit idle before
   *     the database ends it; null for never. A database that cannot set it per transaction gives
   *     the relay pool's {@link #relayPoolInitSql} instead
   * @param outboxPartitionSize positions per outbox partition ({@link Capability#PARTITIONS}), 0 for a plain table
   * @param partitionsAhead empty partitions the janitor keeps ahead ({@link Capability#PARTITIONS}), null for the default
   * @param partitionLockTimeout longest wait for the outbox's lock to create or drop a partition
   *     ({@link Capability#PARTITIONS}), null for the default
   */
  record OutboxSettings(Tables tables, int buckets, boolean listen, DataSource listenDataSource,
      Duration idleTransactionTimeout, long outboxPartitionSize, Integer partitionsAhead,
      Duration partitionLockTimeout) {
    /** The outbox's bucket count when none is named; fixed once the outbox exists. */
    public static final int DEFAULT_BUCKETS = 64;
    /** Empty partitions the janitor keeps ahead of the writers when none is named. */
    public static final int DEFAULT_PARTITIONS_AHEAD = 2;

    /** The tables and bucket count; no listening, no idle limit, no partitions. */
    public static OutboxSettings of(Tables tables, int buckets) {
      return new OutboxSettings(tables, buckets, false, null, null, 0, null, null);
    }

    /** These settings, relays woken by {@code listenDataSource}'s connection (null: the store's). */
    public OutboxSettings withListening(boolean listen, DataSource listenDataSource) {
      return new OutboxSettings(tables, buckets, listen, listenDataSource, idleTransactionTimeout,
          outboxPartitionSize, partitionsAhead, partitionLockTimeout);
    }

    /** These settings, idle relay transactions ended after {@code timeout}. */
    public OutboxSettings withIdleTransactionTimeout(Duration timeout) {
      return new OutboxSettings(tables, buckets, listen, listenDataSource, timeout, outboxPartitionSize,
          partitionsAhead, partitionLockTimeout);
    }

    /** These settings, with an outbox partitioned by {@code size} positions, {@code ahead} kept ahead (null: default). */
    public OutboxSettings withPartitions(long size, Integer ahead) {
      return new OutboxSettings(tables, buckets, listen, listenDataSource, idleTransactionTimeout, size, ahead,
          partitionLockTimeout);
    }

    /** These settings, a partition created or dropped only if the outbox's lock comes within {@code timeout}. */
    public OutboxSettings withPartitionLockTimeout(Duration timeout) {
      return new OutboxSettings(tables, buckets, listen, listenDataSource, idleTransactionTimeout,
          outboxPartitionSize, partitionsAhead, timeout);
    }
  }

  /** The name users know it by, such as {@code PostgreSQL}. */
  String name();

  /** Whether {@code jdbcUrl} names a database of this kind. */
  boolean accepts(String jdbcUrl);

  /** A URL of this kind with its parts named, for errors: {@code jdbc:postgresql://host:5432/database}. */
  String exampleUrl();

  /** What it can do. */
  Set<Capability> capabilities();

  /** Whether it can do {@code capability}. */
  default boolean has(Capability capability) {
    return capabilities().contains(capability);
  }

  /**
   * Why this database cannot do {@code capability}, with what to do instead where there is
   * something: the words every front end quotes when it refuses a setting that needs it (the
   * {@code txbox} command names its option, the starter its property). Empty when it can. A
   * database says more than the default where it helps, as where its tables live instead of in a
   * schema.
   *
   * <pre>{@code
   * database.lacks(Capability.NOTIFY).ifPresent(why -> {
   *   throw new IllegalArgumentException("txbox setting refused, txbox.relay.listen-jdbc-url: " + why);
   * });
   * }</pre>
   */
  default Optional<String> lacks(Capability capability) {
    if (has(capability)) {
      return Optional.empty();
    }
    String why = name() + " has no " + capability.what() + " in txbox";
    return Optional.of(capability.instead().isEmpty() ? why : why + ": " + capability.instead());
  }

  /** The driver's properties that make a connection attempt give up after {@code timeout}. */
  Map<String, String> connectTimeout(Duration timeout);

  /**
   * A query whose one row and column is the id of the server session that answers it, such as
   * PostgreSQL's {@code SELECT pg_backend_pid()}: how {@link io.txbox.jdbc.ServerConnections} tells whether a
   * pooler lends server connections per transaction. Asked of a database with
   * {@link Capability#POOLER_DETECTION}.
   */
  String sessionIdQuery();

  /**
   * The driver's properties for connections that a pooler lends per transaction, so that nothing
   * the driver keeps on the server outlives a transaction, such as pgjdbc's
   * {@code prepareThreshold=0} (no named prepared statements); empty where the driver keeps
   * nothing there. A URL that names one of them has chosen for itself.
   */
  Map<String, String> perTransactionPoolerProperties();

  /**
   * A data source without a pool over {@code jdbcUrl}, which connects within 10 s or fails: for
   * one connection held apart from a pool (a relay's {@code LISTEN}) or a look before a pool opens.
   * {@code user} and {@code password}, each null for none, apply where the URL names none.
   *
   * @throws IllegalArgumentException when this database does not {@link #accepts accept} the URL
   */
  DataSource unpooledDataSource(String jdbcUrl, String user, String password);

  /**
   * The SQL each new connection of a table relay's pool runs so that the database ends a session
   * that sits idle inside a transaction longer than {@code limit}, which would otherwise keep its
   * row locks; empty where the store does that in each transaction
   * ({@link OutboxSettings#idleTransactionTimeout}), as it must behind a transaction pooler.
   */
  Optional<String> relayPoolInitSql(Duration limit);

  /** The outbox table's name as its store shows it, such as {@code public.txbox_outbox}. */
  String outboxTable(DataSource dataSource, Tables tables);

  /**
   * A query with one parameter, a table's name as {@link #outboxTable} gives it, whose one row
   * and column say whether that table exists.
   */
  String tableExistsQuery();

  /** Whether the outbox table of {@code tables} exists in the database {@code dataSource} reaches. */
  default boolean hasOutboxTable(DataSource dataSource, Tables tables) throws SQLException {
    try (Connection c = dataSource.getConnection(); PreparedStatement p = c.prepareStatement(tableExistsQuery())) {
      p.setString(1, outboxTable(dataSource, tables));
      try (ResultSet rs = p.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  /**
   * The table outbox of {@code settings} over {@code dataSource}: what writers, relays, the janitor
   * and operators use.
   *
   * @throws IllegalArgumentException for a setting this database lacks, naming it
   */
  JdbcOutboxStore outboxStore(DataSource dataSource, OutboxSettings settings);

  /** What {@link OperatorStore#migrate()} would run for {@code settings}, as SQL; reads no database. */
  List<MigrationScript> migrationScripts(OutboxSettings settings);

  /** The operators' view of the tables: status, dead letters, replay, migration. */
  OperatorStore operatorStore(DataSource dataSource, Tables tables);

  /** The inbox store of the tables. */
  InboxStore inboxStore(Tables tables);

  /** The database {@code jdbcUrl} names, among those on the class path; empty when none takes it. */
  static Optional<Database> forUrl(String jdbcUrl) {
    return known().stream().filter(d -> d.accepts(jdbcUrl)).findFirst();
  }

  /** Every database on the class path, by name. */
  static List<Database> known() {
    return ServiceLoader.load(Database.class, Database.class.getClassLoader()).stream()
        .map(ServiceLoader.Provider::get)
        .sorted(Comparator.comparing(Database::name))
        .toList();
  }
}
