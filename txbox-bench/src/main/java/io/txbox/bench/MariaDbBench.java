package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.spi.OutboxStore;
import io.txbox.testkit.TestDatabase;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The MariaDB store beside the PostgreSQL one on the same machine, in alternating rounds: what
 * {@code Outbox.send} costs a business transaction on each, and how fast a relay drains a backlog
 * from each into one Kafka broker.
 */
@Command(name = "mariadb", description = "MariaDB beside PostgreSQL: write overhead of Outbox.send and relay drain into Kafka.")
final class MariaDbBench implements Callable<Integer> {
  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--mariadb-url", defaultValue = "jdbc:mariadb://127.0.0.1:3306/?user=root",
      description = "The MariaDB server; the benchmark creates and drops the database txbox_bench on it.")
  String mariaDbUrl;

  @Option(names = "--threads", defaultValue = "4")
  int threads;

  @Option(names = "--seconds", defaultValue = "10", description = "Length of one write measurement.")
  int seconds;

  @Option(names = "--events", defaultValue = "100000", description = "Backlog drained per round.")
  int events;

  @Option(names = "--rounds", defaultValue = "3")
  int rounds;

  @Override
  public Integer call() throws Exception {
    try (BenchDatabase pg = new BenchDatabase(jdbcUrl, threads + 4); HikariDataSource maria = mariaDb();
        KafkaBench kafka = new KafkaBench(8)) {
      PostgresOutboxStore pgStore = WriteOverhead.migrated(pg.store().notifyOnAppend(false).build());
      MariaDbOutboxStore mariaStore = MariaDbOutboxStore.builder(maria).build();
      mariaStore.migrate();
      Map<String, List<Double>> rates = writeRounds(pg, pgStore, maria, mariaStore);
      Map<String, List<Double>> drains = drainRounds(pg, pgStore, maria, mariaStore, kafka);

      Results results = new Results("mariadb", "java -jar txbox-bench/target/txbox-bench.jar mariadb");
      results.setting("threads", threads);
      results.setting("secondsPerMeasurement", seconds);
      results.setting("events", events);
      results.setting("rounds", rounds);
      results.setting("statistic", "median of rounds");
      double mariaBare = WriteOverhead.median(rates.get("mariadb bare"));
      double pgBare = WriteOverhead.median(rates.get("postgres bare"));
      results.add("MariaDB: business tx/s, bare (one INSERT)", mariaBare, "tx/s");
      results.add("MariaDB: business tx/s + Outbox.send", WriteOverhead.median(rates.get("mariadb outbox")),
          "tx/s", "MariaDB bare", mariaBare);
      results.add("MariaDB: business tx/s with a second order row (the floor of any second row)",
          WriteOverhead.median(rates.get("mariadb two-rows")), "tx/s", "MariaDB bare", mariaBare);
      results.add("PostgreSQL: business tx/s, bare (one INSERT)", pgBare, "tx/s");
      results.add("PostgreSQL: business tx/s + Outbox.send, NOTIFY off",
          WriteOverhead.median(rates.get("postgres outbox")), "tx/s", "PostgreSQL bare", pgBare);
      results.add("PostgreSQL: business tx/s with a second order row",
          WriteOverhead.median(rates.get("postgres two-rows")), "tx/s", "PostgreSQL bare", pgBare);
      double pgDrain = WriteOverhead.median(drains.get("postgres"));
      results.add("PostgreSQL table relay: drained into Kafka", pgDrain, "msgs/s");
      results.add("MariaDB relay: drained into Kafka", WriteOverhead.median(drains.get("mariadb")), "msgs/s",
          "PostgreSQL table relay", pgDrain);
      results.publish(Path.of("txbox-bench", "results"));
    }
    return 0;
  }

  private HikariDataSource mariaDb() throws SQLException {
    try (HikariDataSource server = TestDatabase.pool(mariaDbUrl, 1); Connection c = server.getConnection();
        Statement s = c.createStatement()) {
      s.execute("DROP DATABASE IF EXISTS txbox_bench");
      s.execute("CREATE DATABASE txbox_bench");
    }
    HikariDataSource db = TestDatabase.pool(mariaDbUrl.replace("3306/", "3306/txbox_bench"), threads + 4);
    try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, customer VARCHAR(64) NOT NULL,"
          + " amount DECIMAL(12, 2) NOT NULL, created_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)))");
    }
    return db;
  }

  private Map<String, List<Double>> writeRounds(BenchDatabase pg, PostgresOutboxStore pgStore,
      HikariDataSource maria, MariaDbOutboxStore mariaStore) throws Exception {
    Outbox pgOutbox = Outbox.create(pgStore);
    Outbox mariaOutbox = Outbox.create(mariaStore);
    Map<String, HikariDataSource> sources = Map.of("mariadb", maria, "postgres", pg.dataSource);
    Map<String, TransactionRate.Work> variants = new LinkedHashMap<>();
    variants.put("mariadb bare", MariaDbBench::insertMariaDbOrder);
    variants.put("mariadb outbox", (c, n) -> {
      insertMariaDbOrder(c, n);
      mariaOutbox.send(c, Events.orderPlaced("orders", n));
    });
    variants.put("mariadb two-rows", (c, n) -> { // the floor: any second row, not an outbox row
      insertMariaDbOrder(c, n);
      insertMariaDbOrder(c, n + 1);
    });
    variants.put("postgres bare", WriteOverhead::insertOrder);
    variants.put("postgres outbox", (c, n) -> {
      WriteOverhead.insertOrder(c, n);
      pgOutbox.send(c, Events.orderPlaced("orders", n));
    });
    variants.put("postgres two-rows", (c, n) -> {
      WriteOverhead.insertOrder(c, n);
      WriteOverhead.insertOrder(c, n + 1);
    });
    Map<String, List<Double>> rates = new LinkedHashMap<>();
    variants.keySet().forEach(name -> rates.put(name, new ArrayList<>()));
    for (var v : variants.entrySet()) {
      TransactionRate.measure(sources.get(v.getKey().split(" ")[0]), threads, 3, v.getValue()); // warm-up
    }
    for (int round = 1; round <= rounds; round++) {
      for (var v : variants.entrySet()) {
        double rate = TransactionRate.measure(sources.get(v.getKey().split(" ")[0]), threads, seconds, v.getValue());
        rates.get(v.getKey()).add(rate);
        System.out.printf("round %d  %-18s %,10.0f tx/s%n", round, v.getKey(), rate);
      }
    }
    return rates;
  }

  private Map<String, List<Double>> drainRounds(BenchDatabase pg, PostgresOutboxStore pgStore,
      HikariDataSource maria, MariaDbOutboxStore mariaStore, KafkaBench kafka) throws Exception {
    Map<String, List<Double>> drains = new LinkedHashMap<>();
    drains.put("mariadb", new ArrayList<>());
    drains.put("postgres", new ArrayList<>());
    for (int round = 1; round <= rounds; round++) {
      String subscription = "drain-" + round; // a fresh checkpoint per round over a fresh backlog
      try (Connection c = maria.getConnection(); Statement s = c.createStatement()) {
        s.execute("DELETE FROM txbox_outbox");
        s.execute("INSERT INTO txbox_outbox (`key`, type, destination, payload, content_type, headers)"
            + " SELECT CONCAT('customer-', seq % 10000), 'OrderPlaced', '" + kafka.relayDestination() + "',"
            + " REPEAT('x', 300), 'application/json', '{\"traceparent\": \"" + Events.TRACEPARENT + "\"}'"
            + " FROM seq_1_to_" + events);
      }
      pg.execute("TRUNCATE " + pgStore.outboxTable());
      pg.execute("INSERT INTO " + pgStore.outboxTable()
          + " (id, key, type, destination, payload, content_type, headers, created_at)"
          + " SELECT gen_random_uuid(), 'customer-' || (g % 10000), 'OrderPlaced', '" + kafka.relayDestination() + "',"
          + " convert_to(repeat('x', 300), 'UTF8'), 'application/json',"
          + " jsonb_build_object('traceparent', '" + Events.TRACEPARENT + "'), now()"
          + " FROM generate_series(1, " + events + ") AS g", "VACUUM ANALYZE " + pgStore.outboxTable());
      double m = drain(mariaStore, kafka, subscription);
      double p = drain(pgStore, kafka, subscription);
      drains.get("mariadb").add(m);
      drains.get("postgres").add(p);
      System.out.printf("round %d  drain: MariaDB %,.0f msgs/s, PostgreSQL %,.0f msgs/s%n", round, m, p);
    }
    return drains;
  }

  private double drain(OutboxStore store, KafkaBench kafka, String subscription) throws InterruptedException {
    AtomicLong published = new AtomicLong();
    CountDownLatch done = new CountDownLatch(1);
    Metrics counting = new Metrics() {
      @Override
      public void published(String s, List<Message> acknowledged) {
        if (published.addAndGet(acknowledged.size()) >= events) {
          done.countDown();
        }
      }
    };
    long start = System.nanoTime();
    try (Relay relay = Relay.builder(store, kafka.publisher()).subscription(subscription).metrics(counting)
        .build().start()) {
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException("the relay did not drain the backlog in 30 minutes");
      }
      return events / ((System.nanoTime() - start) / 1e9);
    }
  }

  static void insertMariaDbOrder(Connection c, long n) throws SQLException {
    try (PreparedStatement insert = c.prepareStatement("INSERT INTO orders (customer, amount) VALUES (?, ?)")) {
      insert.setString(1, "customer-" + (n % 10_000));
      insert.setBigDecimal(2, BigDecimal.valueOf(n % 100_000, 2));
      insert.executeUpdate();
    }
  }
}
