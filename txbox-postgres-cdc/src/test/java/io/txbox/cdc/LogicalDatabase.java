package io.txbox.cdc;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Publisher;
import io.txbox.testkit.TestDatabase;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;

/**
 * A PostgreSQL server with {@code wal_level = logical} (the machine's own runs with {@code
 * replica}): the embedded one from Maven artifacts, one per JVM. Each {@link #fresh} gives a new
 * schema, slot and publication, so tests never see each other's events.
 */
final class LogicalDatabase implements AutoCloseable {
  private static EmbeddedPostgres server;

  final HikariDataSource dataSource;
  final PostgresOutboxStore store;
  final LogicalReplication replication;
  final String schema;
  final String url;

  private LogicalDatabase(String schema, String url) {
    this.schema = schema;
    this.url = url;
    this.dataSource = TestDatabase.pool(url, 20);
    exec("CREATE SCHEMA " + schema);
    this.store = PostgresOutboxStore.builder(dataSource).schema(schema).build();
    this.replication = LogicalReplication.builder(dataSource, store).slot(schema).publication(schema).build();
  }

  /** A new schema with migrated tables, its own slot and publication. */
  static LogicalDatabase fresh() {
    return freshIn("postgres");
  }

  /** As {@link #fresh}, in another database of the shared server. */
  static LogicalDatabase freshIn(String database) {
    LogicalDatabase db = new LogicalDatabase("c_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12),
        server().getJdbcUrl("postgres", database));
    db.replication.migrate();
    return db;
  }

  /** The JDBC URL of the shared server, started on first use. */
  static synchronized String jdbcUrl() {
    return server().getJdbcUrl("postgres", "postgres");
  }

  static synchronized EmbeddedPostgres server() {
    if (server == null) {
      server = start(Map.of());
      EmbeddedPostgres started = server;
      Runtime.getRuntime().addShutdownHook(new Thread(() -> close(started), "txbox-postgres-shutdown"));
    }
    return server;
  }

  /** A server of its own, with extra settings; the caller closes it. */
  static EmbeddedPostgres start(Map<String, String> settings) {
    try {
      EmbeddedPostgres.Builder b = EmbeddedPostgres.builder()
          .setServerConfig("wal_level", "logical")
          .setServerConfig("max_replication_slots", "40")
          .setServerConfig("max_wal_senders", "40")
          .setServerConfig("max_connections", "200");
      settings.forEach(b::setServerConfig);
      return b.start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start an embedded PostgreSQL", e);
    }
  }

  static void close(EmbeddedPostgres postgres) {
    try {
      postgres.close();
    } catch (IOException e) {
      // the process is going with the JVM anyway
    }
  }

  /** Replication connection properties of the shared server. */
  static Properties credentials() {
    Properties p = new Properties();
    p.setProperty("user", "postgres");
    return p;
  }

  LogicalRelay.Builder relay(String bootstrapServers) {
    return relay(KafkaPublisher.builder().bootstrapServers(bootstrapServers).build());
  }

  LogicalRelay.Builder relay(Publisher publisher) {
    return LogicalRelay.builder(replication, publisher).connection(url, credentials());
  }

  Outbox tableOutbox() {
    return Outbox.create(store.writer());
  }

  Outbox walOutbox() {
    return Outbox.create(WalOutboxStore.create());
  }

  /** Sends the messages in one committed transaction. */
  void commit(Outbox outbox, Message... messages) throws SQLException {
    commit(outbox, dataSource, messages);
  }

  /** Sends the messages in one committed transaction on a connection of {@code pool}. */
  void commit(Outbox outbox, javax.sql.DataSource pool, Message... messages) throws SQLException {
    try (Connection c = pool.getConnection()) {
      c.setAutoCommit(false);
      for (Message m : messages) {
        outbox.send(c, m);
      }
      c.commit();
    }
  }

  /** How many dead letters the outbox holds. */
  long deadLetters() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        java.sql.ResultSet rs = s.executeQuery("SELECT count(*) FROM " + store.tables().deadLetter())) {
      rs.next();
      return rs.getLong(1);
    }
  }

  void exec(String sql) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /** Drops the slot (no relay may stream it), the publication and the schema. */
  @Override
  public void close() {
    try {
      replication.drop();
      exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } finally {
      dataSource.close();
    }
  }
}
