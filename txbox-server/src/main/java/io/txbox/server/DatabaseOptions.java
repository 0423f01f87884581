package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.TxboxException;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.ServerConnections;
import io.txbox.jdbc.spi.Database;
import io.txbox.jdbc.spi.Database.Capability;
import io.txbox.spi.InboxStore;
import io.txbox.spi.support.Secrets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/**
 * Where the outbox tables are, and how to connect: the database options every txbox command
 * shares, as a picocli mixin.
 *
 * <pre>{@code
 * @Mixin DatabaseOptions database;
 * try (HikariDataSource ds = database.pool()) { database.checkConnection(ds); ... }
 * }</pre>
 */
public final class DatabaseOptions {
  private static final Logger log = LoggerFactory.getLogger(DatabaseOptions.class);
  private static final Pattern USER_INFO = Pattern.compile("^jdbc:[^/]*//[^/?#]*@");

  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
      description = "JDBC URL of the PostgreSQL database, or of the MariaDB database (jdbc:mariadb://;"
          + " txbox relay and txbox migrate). Default: ${DEFAULT-VALUE}.")
  String jdbcUrl;

  @Option(names = "--db-user", description = "Database user (or in the URL).")
  String user;

  @Option(names = "--db-password", description = "Database password (or in the URL).")
  String password;

  @Option(names = "--schema", defaultValue = Database.Tables.DEFAULT_SCHEMA,
      description = "Schema of the txbox tables. Default: ${DEFAULT-VALUE}.")
  String schema;

  @Option(names = "--table-prefix", defaultValue = Database.Tables.DEFAULT_TABLE_PREFIX,
      description = "Prefix of the txbox table names. Default: ${DEFAULT-VALUE}.")
  String tablePrefix;

  /** The database {@link #database()} found for the URL; null until asked. */
  private Database database;

  @Option(names = "--pool-size", defaultValue = "4", description = "Database connections. Default: ${DEFAULT-VALUE}.")
  int poolSize;

  /** Options picocli fills in. */
  public DatabaseOptions() {}

  /**
   * A pool on PostgreSQL that connects on first use; only the settings are checked here. A MariaDB
   * URL is refused, naming the commands that run on MariaDB.
   */
  public HikariDataSource pool() {
    Database db = database();
    db.lacks(Capability.LOGICAL_DECODING).ifPresent(why -> {
      throw new IllegalArgumentException("invalid --jdbc-url (TXBOX_JDBC_URL): '"
          + TerminalText.of(Secrets.maskUrl(jdbcUrl), 200) + "' is a " + db.name() + " URL, and this needs logical"
          + " decoding: " + why + ". On " + db.name() + ", txbox migrate, relay --source table, status, dead-letters,"
          + " replay, audit and console run");
    });
    return poolOnAnyDatabase();
  }

  /**
   * A pool on PostgreSQL or MariaDB for the operators' commands (status, dead-letters, replay,
   * audit, console), which run on both; on MariaDB the options that name PostgreSQL things are
   * refused first.
   */
  HikariDataSource operatorPool(CommandSpec spec) {
    refuseWhatTheDatabaseLacks(spec);
    return poolOnAnyDatabase();
  }

  /** A pool on PostgreSQL or MariaDB, for the commands that run on both. */
  public HikariDataSource poolOnAnyDatabase() {
    Database db = database();
    if (USER_INFO.matcher(jdbcUrl).find()) {
      // pgjdbc reads "app:secret@db" as a host name and would quote it, password and all, in its errors
      throw new IllegalArgumentException("invalid --jdbc-url (TXBOX_JDBC_URL): " + Secrets.maskUrl(jdbcUrl)
          + " names a user before the host, which the driver does not read: give the user as ?user="
          + " or --db-user, and the password in --db-password or TXBOX_DB_PASSWORD");
    }
    if (poolSize < 2 || poolSize > 100) {
      throw new IllegalArgumentException("poolSize must be >= 2 (the relay listens on one connection)"
          + " and <= 100, was " + poolSize);
    }
    HikariDataSource ds = new HikariDataSource();
    ds.setJdbcUrl(jdbcUrl);
    ds.setUsername(user);
    ds.setPassword(password);
    ds.setMaximumPoolSize(poolSize);
    ds.setPoolName("txbox");
    ds.setConnectionTimeout(10_000);
    db.connectTimeout(Duration.ofSeconds(10)).forEach(ds::addDataSourceProperty);
    return ds;
  }

  /**
   * The database the URL names, among those txbox has modules for.
   *
   * @throws IllegalArgumentException naming --jdbc-url and the kinds of URL it takes
   */
  public Database database() {
    if (database == null || !database.accepts(jdbcUrl)) { // looked up once: every check of a command asks
      database = lookUpDatabase();
    }
    return database;
  }

  private Database lookUpDatabase() {
    return Database.forUrl(jdbcUrl).orElseThrow(() -> new IllegalArgumentException("invalid --jdbc-url"
        + " (TXBOX_JDBC_URL): '" + TerminalText.of(Secrets.maskUrl(jdbcUrl), 200) + "' is the URL of no database"
        + " txbox knows: give one such as " + Database.known().stream().map(Database::exampleUrl)
        .collect(Collectors.joining(" or "))));
  }

  /**
   * Connects once, so that an unreachable database fails at start with a message naming --jdbc-url.
   * First, where the database can tell ({@link ServerConnections}), looks at how connections reach
   * it: through a pooler that lends server connections per transaction, what the driver keeps on
   * its server connection (pgjdbc's named prepared statements) would be gone, or another client's,
   * in the next transaction, so the pool gets the database's
   * {@link Database#perTransactionPoolerProperties} unless the URL chose.
   */
  public void checkConnection(HikariDataSource ds) {
    Map<String, String> poolerProperties = database().perTransactionPoolerProperties();
    boolean urlChose = poolerProperties.keySet().stream().anyMatch(p -> jdbcUrl.contains(p + "="));
    if (database().has(Capability.POOLER_DETECTION) && !poolerProperties.isEmpty() && !urlChose) {
      fitThePoolToATransactionPooler(ds, poolerProperties);
    }
    try (Connection c = ds.getConnection()) {
      c.isValid(5);
    } catch (SQLException | RuntimeException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      if (driverCouldNotParse(e)) {
        throw new IllegalArgumentException("invalid --jdbc-url (TXBOX_JDBC_URL): the driver cannot read "
            + Secrets.maskUrl(jdbcUrl) + ": write it as " + database().exampleUrl()
            + ", an IPv6 host in [brackets], a port as a number", e);
      }
      throw new TxboxException("cannot connect to the database at " + Secrets.maskUrl(jdbcUrl)
          + " (--jdbc-url, TXBOX_JDBC_URL): " + Secrets.mask(cause.getMessage()), e);
    }
  }

  /**
   * Whether a driver failed on the URL's text with an error of its own code rather than an
   * SQLException (MariaDB's {@code begin 1, end -1, length 15} for an unclosed {@code [}): its
   * message would say nothing to the user.
   */
  private static boolean driverCouldNotParse(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof IndexOutOfBoundsException || t instanceof NumberFormatException) {
        return true;
      }
    }
    return false;
  }

  private void fitThePoolToATransactionPooler(HikariDataSource ds, Map<String, String> poolerProperties) {
    if (ds.isRunning()) {
      return; // a pool in use keeps its connections' settings: looked at before, or not at all
    }
    ServerConnections lent;
    try {
      lent = ServerConnections.of(database().unpooledDataSource(jdbcUrl, user, password), database());
    } catch (TxboxException | IllegalArgumentException e) {
      return; // unreachable or unreadable: the connection below fails with the message that says so
    }
    if (lent == ServerConnections.PER_TRANSACTION) {
      poolerProperties.forEach(ds::addDataSourceProperty);
      String chosen = poolerProperties.entrySet().stream().map(p -> p.getKey() + "=" + p.getValue())
          .sorted().collect(Collectors.joining(", "));
      log.info("the database connections go through a pooler that lends server connections per transaction"
          + " (PgBouncer in transaction mode, RDS Proxy): txbox keeps nothing on the server between transactions"
          + " ({}; put {} in --jdbc-url to choose)", chosen, String.join(", ", new TreeSet<>(poolerProperties.keySet())));
    }
  }

  /**
   * A data source without a pool, for one connection held apart from the pool (a relay's
   * {@code LISTEN}): the URL's own user and password, else {@code --db-user} and
   * {@code --db-password}.
   */
  DataSource listenDataSource(String url) {
    Database db = database();
    if (!db.accepts(url)) {
      throw new IllegalArgumentException("invalid --listen-jdbc-url (TXBOX_LISTEN_JDBC_URL): '"
          + TerminalText.of(Secrets.maskUrl(url), 200) + "' is not a " + db.name() + " JDBC URL: give one such as "
          + db.exampleUrl() + ", which reaches " + db.name() + " directly or through a pooler in session mode");
    }
    try {
      return db.unpooledDataSource(url, user, password);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("invalid --listen-jdbc-url (TXBOX_LISTEN_JDBC_URL): " + e.getMessage(), e);
    }
  }

  /** {@link #checkConnection} and {@link #checkTables}: what every command that reads the tables does first. */
  public void checkDatabase(HikariDataSource ds) {
    checkConnection(ds);
    checkTables(ds);
  }

  /**
   * Fails with a message naming {@code --schema} when the tables these options name do not exist:
   * a typo in the schema would otherwise surface as a raw SQL error on every query.
   */
  public void checkTables(HikariDataSource ds) {
    Database db = database();
    boolean found;
    try {
      found = db.hasOutboxTable(ds, tables());
    } catch (SQLException e) {
      throw new TxboxException("cannot look up the txbox tables: " + Secrets.mask(e.getMessage()), e);
    }
    if (found) {
      return;
    }
    String outbox = db.outboxTable(ds, tables());
    if (db.has(Capability.SCHEMAS)) {
      throw new IllegalArgumentException("invalid --schema or --table-prefix (TXBOX_SCHEMA, TXBOX_TABLE_PREFIX): no"
          + " txbox tables at " + outbox + ": name the schema and prefix that hold them, or create them with txbox migrate");
    }
    throw new IllegalArgumentException("invalid --jdbc-url or --table-prefix (TXBOX_JDBC_URL, TXBOX_TABLE_PREFIX): no"
        + " txbox table " + outbox + " in the database the URL names: name the database and prefix that hold"
        + " them, or create them with txbox migrate");
  }

  /** Where these options say the tables are. */
  Database.Tables tables() {
    return new Database.Tables(schema, tablePrefix);
  }

  /** Refuses {@code --schema} when the URL's database keeps its tables in no schema. */
  void refuseWhatTheDatabaseLacks(CommandSpec spec) {
    refuseGiven(spec, Capability.SCHEMAS, "--schema");
  }

  /**
   * Refuses {@code options}, those given, when the URL's database lacks {@code needed}, in the
   * database's own words ({@link Database#lacks}): a setting it would not honour is never ignored
   * in silence.
   */
  void refuseGiven(CommandSpec spec, Capability needed, String... options) {
    database().lacks(needed).ifPresent(why -> TxboxCommand.refuseGiven(spec, "do not apply: " + why + "; drop them",
        options));
  }

  /** The operators' view of the tables these options name, on PostgreSQL or MariaDB. */
  public OperatorStore operatorStore(HikariDataSource dataSource) {
    return database().operatorStore(dataSource, tables());
  }

  /** The inbox store of the tables these options name, on PostgreSQL or MariaDB. */
  public InboxStore inboxStore() {
    return database().inboxStore(tables());
  }

  /**
   * The outbox store of the tables these options name, with the default bucket count: for
   * commands that read the tables or the slots and create none.
   */
  public JdbcOutboxStore outboxStore(HikariDataSource dataSource) {
    Database.OutboxSettings settings = Database.OutboxSettings.of(tables(), Database.OutboxSettings.DEFAULT_BUCKETS);
    return database().outboxStore(dataSource, settings);
  }
}
