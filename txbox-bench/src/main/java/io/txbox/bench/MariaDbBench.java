package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.spi.OutboxStore;
import io.txbox.testkit.TestDatabase;
import java.math.BigDecimal;
import java.nio.file.Path;
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
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The MariaDB store beside the PostgreSQL one on the same machine, in alternating rounds: what
 * {@code Outbox.send} costs a business transaction on each, how fast a relay drains a backlog
 * from each into one Kafka broker, and how long an event takes from commit to the broker's ack.
 */
@Command(name = "mariadb", description = "MariaDB beside PostgreSQL: write overhead of Outbox.send, relay drain into"
    + " Kafka, and commit-to-ack latency at 1,000 events/s.")
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

  @Option(names = "--latency-seconds", defaultValue = "10",
      description = "Length of one latency measurement at 1,000 events/s; 0 leaves latency out.")
  int latencySeconds;

  /** Writers of the latency measurement, 250 transactions of one event a second each. */
  private static final int LATENCY_WRITERS = 4;

  @Override
  public Integer call() throws Exception {
    try (BenchDatabase pg = new BenchDatabase(jdbcUrl, threads + 4); HikariDataSource maria = mariaDb();
        KafkaBench kafka = new KafkaBench(8)) {
      PostgresOutboxStore pgStore = WriteOverhead.migrated(pg.store().notifyOnAppend(false).build());
      MariaDbOutboxStore mariaStore = MariaDbOutboxStore.builder(maria).build();
      mariaStore.migrate();
      Map<String, List<Double>> rates = writeRounds(pg, pgStore, maria, mariaStore);
      Map<String, List<Double>> drains = drainRounds(pg, pgStore, maria, mariaStore, kafka);
      Map<String, List<long[]>> latencies = latencySeconds > 0 ? latencyRounds(pg, maria, mariaStore, kafka) : Map.of();
      Map<String, List<Double>> janitor = janitorRounds(maria, mariaStore, kafka);

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
      results.add("MariaDB janitor: relayed events deleted", WriteOverhead.median(janitor.get("deleted/s")), "rows/s");
      results.add("MariaDB janitor: InnoDB history list length right after",
          WriteOverhead.median(janitor.get("history after")), "undo logs");
      results.add("MariaDB janitor: InnoDB history list length 10 s later",
          WriteOverhead.median(janitor.get("history 10 s later")), "undo logs");
      for (int round = 0; round < rounds; round++) {
        results.add("MariaDB janitor: outbox data + index size before the deletes, round " + (round + 1),
            janitor.get("size MiB").get(round), "MiB");
      }
      latencies.forEach((variant, runs) -> {
        results.add(variant + ": commit to ack p50", medianPercentile(runs, 50), "ms");
        results.add(variant + ": commit to ack p99", medianPercentile(runs, 99), "ms");
      });
      results.publish(Path.of("txbox-bench", "results"));
    }
    return 0;
  }

  /**
   * Commit to broker ack at 1,000 events/s (4 writers, one event a transaction), MariaDB's relay
   * at its default idle interval and at 10 ms (MariaDB has no NOTIFY to wake it) beside
   * PostgreSQL's with NOTIFY, its default; the variants alternate within each round.
   */
  private Map<String, List<long[]>> latencyRounds(BenchDatabase pg, HikariDataSource maria,
      MariaDbOutboxStore mariaStore, KafkaBench kafka) throws Exception {
    kafka.createTopic("latency", 8);
    PostgresOutboxStore pgNotifying = pg.store().build();
    Map<String, List<long[]>> latencies = new LinkedHashMap<>();
    for (int round = 0; round <= rounds; round++) { // round 0 warms the JVM and the broker up
      for (String variant : List.of("MariaDB, idle interval 500 ms (default)", "MariaDB, idle interval 10 ms",
          "PostgreSQL, NOTIFY (default)")) {
        boolean onMariaDb = variant.startsWith("MariaDB");
        if (onMariaDb) {
          try (Connection c = maria.getConnection(); Statement s = c.createStatement()) {
            s.execute("DELETE FROM txbox_outbox");
          }
        } else {
          pg.execute("TRUNCATE " + pgNotifying.operator().outboxTable());
        }
        OutboxStore store = onMariaDb ? mariaStore.relay() : pgNotifying.relay();
        CommitToAck run = new CommitToAck(LATENCY_WRITERS);
        Relay.Builder relay = Relay.builder(store, kafka.publisher()).subscription("latency-" + round)
            .metrics(run.stamp());
        if (variant.contains("10 ms")) {
          relay.idleInterval(Duration.ofMillis(10));
        }
        try (Relay started = relay.build().start()) {
          run.write(onMariaDb ? maria : pg.dataSource, Outbox.create(store), 1_000, 1, latencySeconds);
          Thread.sleep(2000); // the last events' acks
        }
        long[] micros = run.sortedMicros();
        System.out.printf("round %d  latency %-40s p50 %6.1f ms  p99 %6.1f ms  (%,d events)%n", round, variant,
            WriteOverhead.percentile(micros, 50) / 1000.0, WriteOverhead.percentile(micros, 99) / 1000.0,
            micros.length);
        if (round > 0) {
          latencies.computeIfAbsent(variant, v -> new ArrayList<>()).add(micros);
        }
      }
    }
    return latencies;
  }

  /**
   * What the janitor's deletes cost on MariaDB, InnoDB's analogue of PostgreSQL's dead tuples: in
   * each round a backlog of relayed events past the retention is deleted; measured are the rows
   * deleted a second, the undo logs left for InnoDB's purge (the history list length) right after
   * and 10 s later, and the outbox's size before each round's deletes, which stays flat when the
   * pages freed by one round are reused by the next round's rows.
   */
  private Map<String, List<Double>> janitorRounds(HikariDataSource maria, MariaDbOutboxStore store, KafkaBench kafka)
      throws Exception {
    Map<String, List<Double>> measured = new LinkedHashMap<>();
    store.relay().openSubscription("janitor");
    for (int round = 1; round <= rounds; round++) {
      try (Connection c = maria.getConnection(); Statement s = c.createStatement()) {
        s.execute("DELETE FROM txbox_outbox");
        s.execute("INSERT INTO txbox_outbox (`key`, type, destination, payload, content_type, created_at)"
            + " SELECT CONCAT('customer-', seq % 10000), 'OrderPlaced', '" + kafka.relayDestination() + "',"
            + " REPEAT('x', 300), 'application/json', UTC_TIMESTAMP(6) - INTERVAL 2 DAY FROM seq_1_to_" + events);
        // every subscription has relayed everything: the other rounds' subscriptions too
        s.execute("UPDATE txbox_subscription s SET position = (SELECT COALESCE(MAX(position), 0)"
            + " FROM txbox_outbox o WHERE o.bucket = s.bucket)");
      }
      double sizeMiB = outboxSizeMiB(maria);
      long start = System.nanoTime();
      long deleted = Janitor.builder(store.janitor()).outboxRetention(Duration.ofDays(1))
          .maxBatches(100_000).build().runOnce().outboxEvents();
      double perSecond = deleted / ((System.nanoTime() - start) / 1e9);
      double historyAfter = historyLength(maria);
      Thread.sleep(10_000); // what InnoDB's purge does meanwhile
      double historyLater = historyLength(maria);
      System.out.printf("round %d  janitor: outbox %.1f MiB, %,d deleted, %,.0f rows/s, history list %,.0f then"
          + " %,.0f 10 s later%n", round, sizeMiB, deleted, perSecond, historyAfter, historyLater);
      measured.computeIfAbsent("deleted/s", k -> new ArrayList<>()).add(perSecond);
      measured.computeIfAbsent("history after", k -> new ArrayList<>()).add(historyAfter);
      measured.computeIfAbsent("history 10 s later", k -> new ArrayList<>()).add(historyLater);
      measured.computeIfAbsent("size MiB", k -> new ArrayList<>()).add(sizeMiB);
    }
    return measured;
  }

  /** Undo logs waiting for InnoDB's purge: the analogue of dead tuples waiting for VACUUM. */
  private static double historyLength(HikariDataSource maria) throws SQLException {
    try (Connection c = maria.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(
            "SELECT count FROM information_schema.INNODB_METRICS WHERE name = 'trx_rseg_history_len'")) {
      return rs.next() ? rs.getDouble(1) : Double.NaN;
    }
  }

  private static double outboxSizeMiB(HikariDataSource maria) throws SQLException {
    try (Connection c = maria.getConnection(); Statement s = c.createStatement()) {
      s.execute("ANALYZE TABLE txbox_outbox");
      try (ResultSet rs = s.executeQuery("SELECT data_length + index_length FROM information_schema.TABLES"
          + " WHERE table_schema = DATABASE() AND table_name = 'txbox_outbox'")) {
        return rs.next() ? rs.getDouble(1) / (1024 * 1024) : Double.NaN;
      }
    }
  }

  /** The median over runs of one percentile of each run, in milliseconds. */
  private static double medianPercentile(List<long[]> runs, int percentile) {
    List<Double> values = runs.stream().map(r -> WriteOverhead.percentile(r, percentile) / 1000.0).toList();
    return WriteOverhead.median(values);
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
    Outbox pgOutbox = Outbox.create(pgStore.writer());
    Outbox mariaOutbox = Outbox.create(mariaStore.writer());
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
      pg.execute("TRUNCATE " + pgStore.operator().outboxTable());
      pg.execute("INSERT INTO " + pgStore.operator().outboxTable()
          + " (id, key, type, destination, payload, content_type, headers, created_at)"
          + " SELECT gen_random_uuid(), 'customer-' || (g % 10000), 'OrderPlaced', '" + kafka.relayDestination() + "',"
          + " convert_to(repeat('x', 300), 'UTF8'), 'application/json',"
          + " jsonb_build_object('traceparent', '" + Events.TRACEPARENT + "'), now()"
          + " FROM generate_series(1, " + events + ") AS g", "VACUUM ANALYZE " + pgStore.operator().outboxTable());
      double m = drain(mariaStore.relay(), kafka, subscription);
      double p = drain(pgStore.relay(), kafka, subscription);
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
