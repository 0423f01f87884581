package io.txbox.postgres.internal;

import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.spi.Database;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.postgres.PostgresTables;
import io.txbox.spi.InboxStore;
import io.txbox.spi.support.Secrets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/** PostgreSQL, for the {@code txbox} command: found through {@link java.util.ServiceLoader}. */
public final class PostgresDatabase implements Database {
  /** For {@link java.util.ServiceLoader}. */
  public PostgresDatabase() {}

  @Override
  public String name() {
    return "PostgreSQL";
  }

  @Override
  public boolean accepts(String jdbcUrl) {
    return jdbcUrl.startsWith("jdbc:postgresql:");
  }

  @Override
  public String exampleUrl() {
    return "jdbc:postgresql://host:5432/database";
  }

  @Override
  public Set<Capability> capabilities() {
    return EnumSet.allOf(Capability.class);
  }

  /** pgjdbc counts seconds. */
  @Override
  public Map<String, String> connectTimeout(Duration timeout) {
    return Map.of("connectTimeout", Long.toString(Math.max(1, timeout.toSeconds())));
  }

  @Override
  public String sessionIdQuery() {
    return "SELECT pg_backend_pid()";
  }

  /** pgjdbc names its prepared statements after a few uses, and a named one lives on its server connection. */
  @Override
  public Map<String, String> perTransactionPoolerProperties() {
    return Map.of("prepareThreshold", "0");
  }

  @Override
  public DataSource unpooledDataSource(String jdbcUrl, String user, String password) {
    if (!accepts(jdbcUrl)) {
      throw new IllegalArgumentException("not a PostgreSQL JDBC URL: give one such as " + exampleUrl());
    }
    try {
      return Pgjdbc.unpooled(jdbcUrl, user, password);
    } catch (IllegalArgumentException e) { // pgjdbc's own says "URL invalid <the whole URL>", password and all
      throw new IllegalArgumentException("the PostgreSQL driver cannot read the JDBC URL " + Secrets.maskUrl(jdbcUrl)
          + ": write it as " + exampleUrl() + ", a port as a number");
    }
  }

  /** pgjdbc's own classes, apart so that this class loads without the driver on the class path. */
  private static final class Pgjdbc {
    static DataSource unpooled(String url, String user, String password) {
      PGSimpleDataSource ds = new PGSimpleDataSource();
      ds.setURL(url);
      if (user != null && !url.contains("user=")) {
        ds.setUser(user);
      }
      if (password != null && !url.contains("password=")) {
        ds.setPassword(password);
      }
      ds.setPrepareThreshold(0); // one connection, few statements: nothing to gain, and safe behind any pooler
      ds.setConnectTimeout(10);
      return ds;
    }
  }

  /** None: the store sets {@code idle_in_transaction_session_timeout} in each transaction, which survives PgBouncer. */
  @Override
  public Optional<String> relayPoolInitSql(Duration limit) {
    return Optional.empty();
  }

  @Override
  public String outboxTable(DataSource dataSource, Tables tables) {
    return store(dataSource, tables).operator().outboxTable();
  }

  @Override
  public String tableExistsQuery() {
    return "SELECT to_regclass(?) IS NOT NULL";
  }

  @Override
  public JdbcOutboxStore outboxStore(DataSource dataSource, OutboxSettings settings) {
    PostgresOutboxStore.Builder b = PostgresOutboxStore.builder(dataSource).schema(settings.tables().schema())
        .tablePrefix(settings.tables().tablePrefix()).buckets(settings.buckets()).listen(settings.listen())
        .idleTransactionTimeout(settings.idleTransactionTimeout())
        .outboxPartitionSize(settings.outboxPartitionSize());
    if (settings.listenDataSource() != null) {
      b.listenDataSource(settings.listenDataSource());
    }
    if (settings.partitionsAhead() != null) {
      b.partitionsAhead(settings.partitionsAhead());
    }
    if (settings.partitionLockTimeout() != null) {
      b.partitionLockTimeout(settings.partitionLockTimeout());
    }
    return b.build();
  }

  @Override
  public List<MigrationScript> migrationScripts(OutboxSettings settings) {
    Integer ahead = settings.partitionsAhead();
    return PostgresMigration.of(new PostgresTables(settings.tables().schema(), settings.tables().tablePrefix()),
        settings.buckets(), settings.outboxPartitionSize(),
        ahead == null ? PostgresOutboxStore.DEFAULT_PARTITIONS_AHEAD : ahead).scripts();
  }

  @Override
  public OperatorStore operatorStore(DataSource dataSource, Tables tables) {
    return store(dataSource, tables).operator();
  }

  @Override
  public InboxStore inboxStore(Tables tables) {
    return PostgresInboxStore.builder().schema(tables.schema()).tablePrefix(tables.tablePrefix()).build();
  }

  private static PostgresOutboxStore store(DataSource dataSource, Tables tables) {
    return PostgresOutboxStore.builder(dataSource).schema(tables.schema()).tablePrefix(tables.tablePrefix()).build();
  }
}
