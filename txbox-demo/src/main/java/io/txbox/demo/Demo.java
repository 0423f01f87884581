package io.txbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Outbox;
import io.txbox.cdc.LogicalReplication;
import io.txbox.cdc.WalOutboxStore;
import io.txbox.examples.ShopSchema;
import io.txbox.examples.inventory.InventoryApp;
import io.txbox.examples.orders.OrderService;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.server.Main;
import io.txbox.spi.support.Secrets;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The whole promise in one run: an order service places orders through the outbox, relays (each
 * its own JVM) publish the events to Kafka, NATS or RabbitMQ, and inventory services (each its own JVM) reserve
 * stock through the inbox, while chaos SIGKILLs relays and inventory services at random. At the
 * end the database says whether any order was lost, reserved twice or reserved out of order.
 */
final class Demo {
  private static final int PARTITIONS = KafkaDemoBroker.PARTITIONS;

  /** The brokers the demo runs on. */
  enum Broker { kafka, nats, rabbitmq, sqs }

  /** How events go from the order service to the relays: outbox rows, or WAL messages through a slot. */
  enum Source { table, logical }

  /** Where the services keep their rows and txbox its tables. */
  enum Database { postgresql, mariadb }

  /**
   * What to run; see {@link DemoCommand} for the defaults. {@code jdbcUrl} and {@code brokerAddress}
   * null: start our own.
   */
  record Settings(long events, int perSecond, int products, int writers, int relays, int consumers,
      int consumerThreads, boolean chaos, Duration chaosInterval, Duration warmUp, String jdbcUrl, Broker broker,
      String brokerAddress, Duration timeout, boolean keep, Source source, Database database) {
    Settings {
      require(events >= 1 && events <= 100_000_000, "--events must be 1 to 100,000,000, was " + events);
      require(perSecond >= 1 && perSecond <= 100_000, "--rate must be 1 to 100,000 events/s, was " + perSecond);
      require(writers >= 1 && writers <= 16, "--writers must be 1 to 16, was " + writers);
      require(products >= writers && products <= 100_000,
          "--products must be at least --writers (" + writers + ") and at most 100,000, was " + products);
      require(relays >= 1 && relays <= 8, "--relays must be 1 to 8, was " + relays);
      require(consumers >= 1 && consumers <= PARTITIONS,
          "--consumers must be 1 to " + PARTITIONS + " (the topic's partitions), was " + consumers);
      require(broker != Broker.nats || consumers == 1, "--consumers must be 1 with --broker nats (one durable"
          + " consumer keeps each key's order; use --consumer-threads to handle keys in parallel), was " + consumers);
      require(consumerThreads >= 1 && consumerThreads <= PARTITIONS,
          "--consumer-threads must be 1 to " + PARTITIONS + ", was " + consumerThreads);
      require(chaosInterval.toMillis() >= 500, "--chaos-interval must be at least 500ms, was " + chaosInterval);
      require(!warmUp.isNegative() && warmUp.compareTo(Duration.ofMinutes(10)) <= 0,
          "--warm-up must be 0 to 10m, was " + warmUp);
      require(timeout.toSeconds() >= 1, "--timeout must be at least 1s, was " + timeout);
      require(database != Database.mariadb || jdbcUrl != null && jdbcUrl.startsWith("jdbc:mariadb://"),
          "--database mariadb needs --jdbc-url of a MariaDB server, such as jdbc:mariadb://127.0.0.1:3306/?user=root"
              + " (there is no embedded MariaDB); the demo creates a database of its own there, was "
              + (jdbcUrl == null ? "none" : "'" + Secrets.maskUrl(jdbcUrl) + "'"));
      require(database != Database.mariadb || source == Source.table,
          "--source logical is PostgreSQL's: on --database mariadb the relays read the table");
    }

    boolean mariaDb() {
      return database == Database.mariadb;
    }

    private static void require(boolean ok, String message) {
      if (!ok) {
        throw new IllegalArgumentException(message);
      }
    }
  }

  private final Settings settings;
  private final PrintStream out;

  Demo(Settings settings, PrintStream out) {
    this.settings = settings;
    this.out = out;
  }

  DemoReport run() throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    if (settings.mariaDb()) {
      return runOnMariaDb(run);
    }
    try (EmbeddedDatabase embedded = settings.jdbcUrl() == null ? startDatabase() : null;
        DemoBroker broker = startBroker(run)) {
      String jdbcUrl = embedded != null ? embedded.jdbcUrl() : settings.jdbcUrl();
      try (HikariDataSource ds = pool(jdbcUrl)) {
        String schema = "txbox_demo_" + run;
        PostgresOutboxStore store = PostgresOutboxStore.builder(ds).schema(schema).build();
        // In logical mode the slot and publication are named after the run's schema.
        LogicalReplication replication = LogicalReplication.builder(ds, store).slot(schema).publication(schema).build();
        Outbox outbox = migrate(store, replication);
        try (Connection c = ds.getConnection()) {
          ShopSchema.create(c, schema, settings.products());
        }
        try {
          return runServices(ds, outbox, jdbcUrl, broker, schema);
        } finally {
          if (!settings.keep()) {
            dropLogicalReplication(replication);
            dropSchema(ds, schema);
          }
        }
      }
    }
  }

  /**
   * The same run on MariaDB: a database of its own on the server {@code --jdbc-url} names, where
   * txbox's tables (in the URL's database, as on MariaDB they always are) and the shop's live.
   */
  private DemoReport runOnMariaDb(String run) throws Exception {
    String database = "txbox_demo_" + run;
    try (HikariDataSource server = pool(settings.jdbcUrl()); DemoBroker broker = startBroker(run)) {
      execute(server, "CREATE DATABASE " + database);
      try {
        String jdbcUrl = withDatabase(settings.jdbcUrl(), database);
        try (HikariDataSource ds = pool(jdbcUrl)) {
          MariaDbOutboxStore store = MariaDbOutboxStore.builder(ds).build();
          store.migrate();
          try (Connection c = ds.getConnection()) {
            ShopSchema.create(c, database, settings.products());
          }
          return runServices(ds, Outbox.create(store.writer()), jdbcUrl, broker, database);
        }
      } finally {
        if (!settings.keep()) {
          execute(server, "DROP DATABASE IF EXISTS " + database);
        }
      }
    }
  }

  /** {@code jdbcUrl} with its database replaced: {@code jdbc:mariadb://host:port/database?options}. */
  static String withDatabase(String jdbcUrl, String database) {
    int hosts = jdbcUrl.indexOf("//") + 2;
    int options = jdbcUrl.indexOf('?', hosts);
    int path = jdbcUrl.indexOf('/', hosts);
    String head = path >= 0 && (options < 0 || path < options) ? jdbcUrl.substring(0, path)
        : jdbcUrl.substring(0, options < 0 ? jdbcUrl.length() : options);
    return head + "/" + database + (options < 0 ? "" : jdbcUrl.substring(options));
  }

  private static void execute(HikariDataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /** The tables, and in logical mode the publication and slot; the outbox the order service writes to. */
  private Outbox migrate(PostgresOutboxStore store, LogicalReplication replication) {
    if (settings.source() == Source.table) {
      store.migrate();
      return Outbox.create(store.writer());
    }
    replication.migrate();
    out.printf("events are WAL messages, streamed from replication slot %s in commit order%n", replication.slot());
    return Outbox.create(WalOutboxStore.withPrefix(replication.messagePrefix()));
  }

  private void dropLogicalReplication(LogicalReplication replication) {
    if (settings.source() == Source.logical) {
      replication.drop(); // a slot left behind would keep WAL for ever
    }
  }

  private DemoReport runServices(HikariDataSource ds, Outbox outbox, String jdbcUrl, DemoBroker broker,
      String schema) throws Exception {
    Path logs = Files.createTempDirectory("txbox-demo-");
    out.printf("%d relays and %d inventory services start as separate JVMs (logs in %s)%n",
        settings.relays(), settings.consumers(), logs);
    OrderWriter writer = new OrderWriter(ds, new OrderService(outbox, schema, broker.destination()),
        settings.products());
    ScheduledExecutorService progress = Executors.newSingleThreadScheduledExecutor();
    try (DemoProcesses processes = new DemoProcesses(logs, broker.jvmOptions())) {
      startProcesses(processes, jdbcUrl, broker, schema);
      long started = System.nanoTime();
      progress.scheduleAtFixedRate(() -> progress(ds, schema, writer, processes, broker, started), 2, 2,
          TimeUnit.SECONDS);
      warmUp(ds, schema, writer);
      long measuredFrom = System.nanoTime();
      String measuredSince = databaseNow(ds);
      Chaos chaos = settings.chaos() ? Chaos.start(processes, settings.chaosInterval(), out) : null;
      out.printf("placing %,d orders at %,d/s over %d SKUs%s%n", settings.events(), settings.perSecond(),
          settings.products(), chaos == null ? "" : "; chaos kills a process about every "
              + settings.chaosInterval().toMillis() / 1000.0 + " s");
      double writeSeconds;
      try {
        writer.write(settings.events() - writer.written(), settings.perSecond(), settings.writers());
        writeSeconds = (System.nanoTime() - measuredFrom) / 1e9;
      } finally {
        if (chaos != null) {
          chaos.stop();
        }
      }
      out.println("every order is placed" + (chaos == null ? "" : "; chaos stops")
          + "; waiting for the last reservations");
      awaitReservations(ds, schema, settings.events());
      progress.shutdownNow();
      processes.stop(30);
      return DemoReport.read(ds, schema, settings.mariaDb(), chaos == null ? 0 : chaos.kills(), measuredSince,
          writeSeconds);
    } finally {
      progress.shutdownNow();
    }
  }

  private void startProcesses(DemoProcesses processes, String jdbcUrl, DemoBroker broker, String schema)
      throws IOException {
    for (int i = 1; i <= settings.relays(); i++) {
      String name = "relay-" + i;
      processes.start(name, new DemoProcesses.Kind(Main.class.getName(), generation -> concat(
          relayArgs(jdbcUrl, schema, name + "." + generation), broker.relayArgs())));
    }
    for (int i = 1; i <= settings.consumers(); i++) {
      String name = "inventory-" + i;
      processes.start(name, new DemoProcesses.Kind(InventoryApp.class.getName(), generation -> concat(List.of(
          "--jdbc-url", jdbcUrl, "--schema", schema, "--instance", name + "." + generation,
          "--threads", Integer.toString(settings.consumerThreads())), broker.inventoryArgs(name))));
    }
  }

  private List<String> relayArgs(String jdbcUrl, String schema, String instance) {
    if (settings.mariaDb()) {
      // the tables live in the database the URL names
      return List.of("relay", "--jdbc-url", jdbcUrl, "--instance-id", instance,
          "--lease-duration", "4s", "--heartbeat-interval", "1s", "--http-port", "0");
    }
    if (settings.source() == Source.logical) {
      // one relay streams the slot, the others stand by and take it over when it dies
      return List.of("relay", "--source", "logical", "--jdbc-url", jdbcUrl, "--schema", schema,
          "--slot", schema, "--publication", schema, "--http-port", "0");
    }
    // a killed relay's buckets are taken over within seconds
    // several relays on one host: each serves its metrics on a port of its own (logged)
    return List.of("relay", "--jdbc-url", jdbcUrl, "--schema", schema, "--instance-id", instance,
        "--lease-duration", "4s", "--heartbeat-interval", "1s", "--http-port", "0");
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  /**
   * Orders at the full rate for the warm-up time (at least one per writer, at most a quarter of
   * all), then a wait until they are reserved: the JVMs just started on shared cores, and the
   * measured run should not begin while the relays and subscribers are still joining and compiling.
   */
  private void warmUp(HikariDataSource ds, String schema, OrderWriter writer) throws Exception {
    long atRate = settings.perSecond() * settings.warmUp().toMillis() / 1000;
    long orders = Math.min(settings.events(), Math.max(settings.writers(), Math.min(atRate, settings.events() / 4)));
    out.printf("warming up: %,d orders through the whole path...%n", orders);
    writer.write(orders, settings.perSecond(), settings.writers());
    awaitReservations(ds, schema, orders);
  }

  private void awaitReservations(HikariDataSource ds, String schema, long events) throws Exception {
    long deadline = System.nanoTime() + settings.timeout().toNanos();
    while (reservedOrders(ds, schema) < events) {
      if (System.nanoTime() > deadline) {
        out.printf("gave up waiting after %s (--timeout)%n", settings.timeout());
        return;
      }
      Thread.sleep(250);
    }
  }

  private void progress(HikariDataSource ds, String schema, OrderWriter writer, DemoProcesses processes,
      DemoBroker broker, long started) {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT (SELECT count(*) FROM " + schema + ".reservation),"
            + " (SELECT coalesce(sum(duplicates), 0) FROM " + schema + ".subscriber_stats)")) {
      rs.next();
      out.printf("%5.0f s  placed %,9d  %s %,9d  reserved %,9d  duplicates absorbed %,6d  relays up %d/%d"
              + "  inventory up %d/%d%n",
          (System.nanoTime() - started) / 1e9, writer.written(), broker.heldLabel(), broker.held(), rs.getLong(1),
          rs.getLong(2),
          processes.alive("relay-"), settings.relays(), processes.alive("inventory-"), settings.consumers());
    } catch (SQLException | RuntimeException e) {
      out.println("progress: " + e.getMessage());
    }
  }

  /** The database's clock now, as an SQL expression that reads the same time back. */
  private String databaseNow(HikariDataSource ds) throws SQLException {
    String now = settings.mariaDb() ? "SELECT CAST(UTC_TIMESTAMP(6) AS CHAR)" : "SELECT clock_timestamp()::text";
    try (Connection c = ds.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(now)) {
      rs.next();
      return "'" + rs.getString(1) + "'" + (settings.mariaDb() ? "" : "::timestamptz");
    }
  }

  private static long reservedOrders(HikariDataSource ds, String schema) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(DISTINCT order_id) FROM " + schema + ".reservation")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private EmbeddedDatabase startDatabase() throws IOException {
    out.println("starting an embedded PostgreSQL (binaries from Maven Central; --jdbc-url to use yours)...");
    return EmbeddedDatabase.start(settings.source() == Source.logical);
  }

  private DemoBroker startBroker(String run) throws Exception {
    return switch (settings.broker()) {
      case kafka -> new KafkaDemoBroker(settings.brokerAddress(), run, out);
      case nats -> new NatsDemoBroker(settings.brokerAddress(), run, out);
      case rabbitmq -> new RabbitDemoBroker(settings.brokerAddress(), run, out);
      case sqs -> new SqsDemoBroker(settings.brokerAddress(), run, out);
    };
  }

  private static HikariDataSource pool(String jdbcUrl) {
    HikariDataSource ds = new HikariDataSource();
    ds.setJdbcUrl(jdbcUrl);
    ds.setMaximumPoolSize(20);
    ds.setPoolName("txbox-demo");
    return ds;
  }

  private static void dropSchema(HikariDataSource ds, String schema) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP SCHEMA " + schema + " CASCADE");
    }
  }
}
