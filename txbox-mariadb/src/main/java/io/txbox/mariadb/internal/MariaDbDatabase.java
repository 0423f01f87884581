package io.txbox.mariadb.internal;

import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.spi.Database;
import io.txbox.mariadb.MariaDbInboxStore;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.spi.InboxStore;
import io.txbox.spi.support.Secrets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;
import org.mariadb.jdbc.MariaDbDataSource;

/**
 * MariaDB (and MySQL through MariaDB Connector/J), for the {@code txbox} command: found through
 * {@link java.util.ServiceLoader}. The tables live in the database the URL names.
 */
public final class MariaDbDatabase implements Database {
  /** For {@link java.util.ServiceLoader}. */
  public MariaDbDatabase() {}

  @Override
  public String name() {
    return "MariaDB";
  }

  @Override
  public boolean accepts(String jdbcUrl) {
    return jdbcUrl.startsWith("jdbc:mariadb:");
  }

  @Override
  public String exampleUrl() {
    return "jdbc:mariadb://host:3306/database";
  }

  @Override
  public Set<Capability> capabilities() {
    return Set.of();
  }

  /** {@inheritDoc} Without schemas, says where the tables are; without partitions, what the outbox is. */
  @Override
  public Optional<String> lacks(Capability capability) {
    return switch (capability) {
      case SCHEMAS -> Optional.of("on MariaDB the tables live in the database the JDBC URL names (" + exampleUrl() + ")");
      case PARTITIONS -> Optional.of("MariaDB's outbox is not partitioned");
      default -> Database.super.lacks(capability);
    };
  }

  /** Connector/J counts milliseconds. */
  @Override
  public Map<String, String> connectTimeout(Duration timeout) {
    return Map.of("connectTimeout", Long.toString(Math.max(1, timeout.toMillis())));
  }

  /** Asked behind a pooler such as ProxySQL; MariaDB has no {@link Capability#POOLER_DETECTION} in txbox yet. */
  @Override
  public String sessionIdQuery() {
    return "SELECT CONNECTION_ID()";
  }

  /** None: Connector/J prepares statements on the client unless told {@code useServerPrepStmts}. */
  @Override
  public Map<String, String> perTransactionPoolerProperties() {
    return Map.of();
  }

  @Override
  public DataSource unpooledDataSource(String jdbcUrl, String user, String password) {
    if (!accepts(jdbcUrl)) {
      throw new IllegalArgumentException("not a MariaDB JDBC URL: give one such as " + exampleUrl());
    }
    return ConnectorJ.unpooled(jdbcUrl, user, password);
  }

  /** Connector/J's own classes, apart so that this class loads without the driver on the class path. */
  private static final class ConnectorJ {
    static DataSource unpooled(String url, String user, String password) {
      try {
        MariaDbDataSource ds = new MariaDbDataSource(url);
        if (user != null && !url.contains("user=")) {
          ds.setUser(user);
        }
        if (password != null && !url.contains("password=")) {
          ds.setPassword(password);
        }
        ds.setLoginTimeout(10);
        return ds;
      } catch (SQLException e) {
        throw new IllegalArgumentException("the MariaDB driver refuses the JDBC URL " + Secrets.maskUrl(url)
            + ": " + Secrets.mask(e.getMessage()), e);
      }
    }
  }

  /**
   * MariaDB counts whole seconds (rounded up). MySQL has no such setting, so the statement sets it
   * inside a comment only MariaDB executes ({@code /*M! ... *}{@code /}), and on MySQL sets a user
   * variable alone.
   */
  @Override
  public Optional<String> relayPoolInitSql(Duration limit) {
    long seconds = Math.max(1, (limit.toMillis() + 999) / 1000);
    return Optional.of("SET @txbox_relay = 1 /*M!, SESSION idle_transaction_timeout = " + seconds + " */");
  }

  @Override
  public String outboxTable(DataSource dataSource, Tables tables) {
    return store(dataSource, tables).operator().outboxTable();
  }

  @Override
  public String tableExistsQuery() {
    return "SELECT COUNT(*) > 0 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?";
  }

  /** {@inheritDoc} The idle limit comes from {@link #relayPoolInitSql}; what MariaDB lacks is refused. */
  @Override
  public JdbcOutboxStore outboxStore(DataSource dataSource, OutboxSettings settings) {
    refuseWhatMariaDbLacks(settings);
    return MariaDbOutboxStore.builder(dataSource).tablePrefix(settings.tables().tablePrefix())
        .buckets(settings.buckets()).build();
  }

  private void refuseWhatMariaDbLacks(OutboxSettings settings) {
    if (settings.listen() || settings.listenDataSource() != null) {
      throw new IllegalArgumentException("listen: " + lacks(Capability.NOTIFY).orElseThrow());
    }
    if (settings.outboxPartitionSize() > 0 || settings.partitionsAhead() != null
        || settings.partitionLockTimeout() != null) {
      throw new IllegalArgumentException("outboxPartitionSize, partitionsAhead, partitionLockTimeout: "
          + lacks(Capability.PARTITIONS).orElseThrow());
    }
  }

  @Override
  public List<MigrationScript> migrationScripts(OutboxSettings settings) {
    refuseWhatMariaDbLacks(settings);
    return MariaDbMigration.of(new MariaDbTables(settings.tables().tablePrefix()), settings.buckets()).scripts();
  }

  @Override
  public OperatorStore operatorStore(DataSource dataSource, Tables tables) {
    return store(dataSource, tables).operator();
  }

  @Override
  public InboxStore inboxStore(Tables tables) {
    return MariaDbInboxStore.builder().tablePrefix(tables.tablePrefix()).build();
  }

  private static MariaDbOutboxStore store(DataSource dataSource, Tables tables) {
    return MariaDbOutboxStore.builder(dataSource).tablePrefix(tables.tablePrefix()).build();
  }
}
