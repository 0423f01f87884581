package io.txbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.spi.Database;
import io.txbox.jdbc.spi.Database.Capability;
import io.txbox.jdbc.spi.Database.OutboxSettings;
import io.txbox.jdbc.spi.Database.Tables;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.server.DatabaseOptions;
import io.txbox.spi.OutboxStore;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code java -jar txbox-demo.jar quickstart}: starts a Kafka broker of its own, writes events through the outbox
 * into the local PostgreSQL or MariaDB, relays them, reads the topic back and reports what arrived. Its tables
 * are its own (a schema on PostgreSQL, a table prefix on MariaDB), never an application's, and are dropped at
 * the end.
 */
@Command(name = "quickstart", mixinStandardHelpOptions = true, modelTransformer = QuickstartCommand.OwnTables.class,
    description = "Starts a Kafka broker (or uses --kafka-bootstrap-servers), writes events through the outbox into"
        + " PostgreSQL or MariaDB, relays them and checks that every one arrived once, in order per key. Exits 1 if"
        + " any was lost or reordered. Its tables are its own (schema txbox_quickstart_<run> on PostgreSQL, tables"
        + " txbox_qs_<run>_* on MariaDB) and are dropped at the end.")
final class QuickstartCommand implements Callable<Integer> {
  /** The options that name an application's tables: not shown in quickstart's help, and refused if given. */
  private static final List<String> NOT_TAKEN = List.of("--schema", "--table-prefix");

  /** Hides {@link #NOT_TAKEN} from the help: the database options are shared with commands that take them. */
  static final class OwnTables implements CommandLine.IModelTransformer {
    @Override
    public CommandSpec transform(CommandSpec spec) {
      for (String name : NOT_TAKEN) {
        OptionSpec option = spec.findOption(name);
        if (option != null) {
          spec.remove(option);
          spec.addOption(option.toBuilder().hidden(true).build());
        }
      }
      return spec;
    }
  }

  /** Where the run writes: its store, and how to take its tables away again. */
  private record Place(OutboxStore store, String outboxTable, Cleanup cleanup) {}

  /** Drops what a run created. */
  private interface Cleanup {
    void drop(Connection c) throws SQLException;
  }

  @Mixin DatabaseOptions database;

  @Option(names = "--events", defaultValue = "20000", description = "Events to write. Default: ${DEFAULT-VALUE}.")
  int events;

  @Option(names = "--keys", defaultValue = "100", description = "Distinct keys. Default: ${DEFAULT-VALUE}.")
  int keys;

  @Option(names = "--kafka-bootstrap-servers", description = "A Kafka to use instead of starting one; the run"
      + " creates its own topic orders-<run> there (8 partitions) and leaves it. Default: start a broker.")
  String kafkaBootstrapServers;

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    if (events < 1 || keys < 1) {
      throw new IllegalArgumentException("events and keys must be >= 1, were " + events + " and " + keys);
    }
    for (String name : NOT_TAKEN) {
      if (spec.commandLine().getParseResult().hasMatchedOption(name)) {
        throw new IllegalArgumentException(name + " is not taken: it names an application's tables, and quickstart"
            + " makes and drops its own");
      }
    }
    String run = UUID.randomUUID().toString().substring(0, 8);
    String topic = "orders-" + run;
    try (Kafka kafka = kafka(); HikariDataSource ds = database.poolOnAnyDatabase()) {
      kafka.createTopic(topic);
      database.checkConnection(ds);
      Database db = database.database();
      Place place = db.has(Capability.SCHEMAS) ? inOwnSchema(db, ds, run) : withOwnPrefix(db, ds, run);
      try {
        long started = System.nanoTime();
        System.out.printf("writing %,d events over %d keys through Outbox.send into %s%n", events, keys,
            place.outboxTable());
        Map<String, List<String>> expected = write(ds, Outbox.create(place.store()), topic);
        System.out.println("relaying to Kafka at " + kafka.bootstrapServers() + " ...");
        List<TopicReader.Received> received;
        try (Relay relay = Relay.builder(place.store(),
                KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
                .subscription(topic).build().start();
            TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
          received = reader.readUntil(r -> TopicReader.distinctIds(r).size() >= events, Duration.ofMinutes(5));
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        return report(expected, received, seconds);
      } finally {
        try (Connection c = ds.getConnection()) {
          place.cleanup().drop(c);
        }
      }
    }
  }

  /** The broker the run relays to: the one given, or one started for the run and stopped after it. */
  private interface Kafka extends AutoCloseable {
    String bootstrapServers();

    void createTopic(String topic) throws Exception;

    @Override
    void close();
  }

  private Kafka kafka() {
    if (kafkaBootstrapServers != null) {
      String servers = kafkaBootstrapServers;
      return new Kafka() {
        public String bootstrapServers() {
          return servers;
        }

        public void createTopic(String topic) throws Exception {
          try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, servers,
              AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000))) {
            admin.createTopics(List.of(new NewTopic(topic, Optional.of(8), Optional.empty()))).all()
                .get(60, TimeUnit.SECONDS);
          }
        }

        public void close() {}
      };
    }
    System.out.println("starting a Kafka broker (KRaft, from the Kafka jars in this jar)...");
    KafkaBroker broker = KafkaBroker.start("768m");
    return new Kafka() {
      public String bootstrapServers() {
        return broker.bootstrapServers();
      }

      public void createTopic(String topic) {
        broker.createTopic(topic, 8);
      }

      public void close() {
        broker.close();
      }
    };
  }

  /** A database with schemas: the run's tables in a schema of its own. */
  private static Place inOwnSchema(Database db, HikariDataSource ds, String run) {
    String schema = "txbox_quickstart_" + run;
    JdbcOutboxStore store = db.outboxStore(ds, OutboxSettings.of(new Tables(schema, "txbox_"), 64));
    store.migrate();
    return new Place(store.relay(), store.operator().outboxTable(), c -> {
      try (Statement s = c.createStatement()) {
        s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      }
    });
  }

  /** A database without schemas keeps txbox's tables in the URL's: the run's own are told apart by their prefix. */
  private static Place withOwnPrefix(Database db, HikariDataSource ds, String run) {
    String prefix = "txbox_qs_" + run + "_";
    JdbcOutboxStore store = db.outboxStore(ds, OutboxSettings.of(new Tables(null, prefix), 64));
    store.migrate();
    return new Place(store.relay(), store.operator().outboxTable(), c -> dropTablesStartingWith(c, prefix));
  }

  private static void dropTablesStartingWith(Connection c, String prefix) throws SQLException {
    List<String> tables = new ArrayList<>();
    try (PreparedStatement p = c.prepareStatement("SELECT table_name FROM information_schema.tables"
        + " WHERE table_schema = DATABASE() AND table_name LIKE ?")) {
      p.setString(1, prefix.replace("_", "\\_") + "%");
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          tables.add(rs.getString(1));
        }
      }
    }
    if (!tables.isEmpty()) {
      try (Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + String.join(", ", tables));
      }
    }
  }

  /** Writes the events ten to a transaction, one writer: each key's commit order is its write order. */
  private Map<String, List<String>> write(HikariDataSource ds, Outbox outbox, String topic) throws SQLException {
    Map<String, List<String>> byKey = new LinkedHashMap<>();
    for (int i = 0; i < events; i += 10) {
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        List<Message> batch = new ArrayList<>();
        for (int j = i; j < Math.min(events, i + 10); j++) {
          String key = "order-" + (j % keys);
          batch.add(Message.builder().type("OrderPlaced").destination(topic).key(key)
              .payload(("{\"order\":\"" + key + "\",\"seq\":" + j + "}").getBytes(StandardCharsets.UTF_8),
                  "application/json")
              .build());
        }
        outbox.send(c, batch);
        c.commit();
        batch.forEach(m -> byKey.computeIfAbsent(m.key(), k -> new ArrayList<>()).add(m.id().toString()));
      }
    }
    return byKey;
  }

  private int report(Map<String, List<String>> expected, List<TopicReader.Received> received, double seconds) {
    Map<String, List<String>> delivered = TopicReader.firstDeliveriesByKey(received);
    long written = expected.values().stream().mapToLong(List::size).sum();
    long distinct = TopicReader.distinctIds(received).size();
    long reordered = expected.keySet().stream()
        .filter(k -> !expected.get(k).equals(delivered.getOrDefault(k, List.of()))).count();
    System.out.printf("%n%-28s %,12d%n", "events written", written);
    System.out.printf("%-28s %,12d%n", "delivered (distinct ids)", distinct);
    System.out.printf("%-28s %,12d%n", "re-sent duplicates", received.size() - distinct);
    System.out.printf("%-28s %,12d%n", "lost", written - distinct);
    System.out.printf("%-28s %,12d%n", "keys out of order", reordered);
    System.out.printf("%-28s %,12.1f s (%,.0f events/s, write and relay)%n", "elapsed", seconds, written / seconds);
    boolean ok = distinct == written && reordered == 0;
    System.out.println(ok ? "\nOK: every event arrived, in order per key." : "\nFAILED: see the figures above.");
    return ok ? 0 : 1;
  }
}
