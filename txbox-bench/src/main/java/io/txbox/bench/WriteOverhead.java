package io.txbox.bench;

import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Business transactions per second with and without one {@code Outbox.send}, 8 writer threads,
 * measured in interleaved rounds so that drift on a shared machine hits every variant alike.
 */
@Command(name = "write", description = "Write overhead: business tx/s with and without Outbox.send.")
final class WriteOverhead implements Callable<Integer> {
  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--threads", defaultValue = "8")
  int threads;

  @Option(names = "--seconds", defaultValue = "10", description = "Length of one measurement.")
  int seconds;

  @Option(names = "--rounds", defaultValue = "3")
  int rounds;


  @Override
  public Integer call() throws Exception {
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, threads + 2)) {
      // Each variant writes to an outbox table of its own, so that none pays for another's rows.
      Outbox silent = Outbox.create(migrated(db.store().tablePrefix("silent_").notifyOnAppend(false).build()).writer());
      Outbox limitedNotify = Outbox.create(migrated(db.store().build()).writer()); // the default: NOTIFY at most once per 10 ms
      Outbox everyNotify = Outbox.create(migrated(db.store().tablePrefix("every_").notifyOnAppend(true)
          .notifyInterval(Duration.ZERO).build()).writer());
      Outbox unchecked = Outbox.create(uncheckedStore(db).writer());
      Map<String, TransactionRate.Work> variants = new LinkedHashMap<>();
      variants.put("bare", WriteOverhead::insertOrder);
      variants.put("outbox", (c, n) -> {
        insertOrder(c, n);
        silent.send(c, Events.orderPlaced("orders", n));
      });
      variants.put("outbox-no-checks", (c, n) -> {
        insertOrder(c, n);
        unchecked.send(c, Events.orderPlaced("orders", n));
      });
      variants.put("outbox+notify", (c, n) -> {
        insertOrder(c, n);
        limitedNotify.send(c, Events.orderPlaced("orders", n));
      });
      variants.put("outbox+notify-every", (c, n) -> {
        insertOrder(c, n);
        everyNotify.send(c, Events.orderPlaced("orders", n));
      });
      Map<String, List<Double>> rates = new LinkedHashMap<>();
      variants.keySet().forEach(name -> rates.put(name, new ArrayList<>()));
      for (var v : variants.entrySet()) {
        TransactionRate.measure(db.dataSource, threads, 3, v.getValue()); // warm-up: JIT, statements, files
      }
      for (int round = 1; round <= rounds; round++) {
        for (var v : variants.entrySet()) {
          double rate = TransactionRate.measure(db.dataSource, threads, seconds, v.getValue());
          rates.get(v.getKey()).add(rate);
          System.out.printf("round %d  %-14s %,10.0f tx/s%n", round, v.getKey(), rate);
        }
      }
      Results results = new Results("write-overhead", "java -jar txbox-bench/target/txbox-bench.jar write");
      results.setting("threads", threads);
      results.setting("secondsPerMeasurement", seconds);
      results.setting("rounds", rounds);
      results.setting("statistic", "median of rounds");
      double bare = median(rates.get("bare"));
      results.add("business tx/s, bare (one INSERT)", bare, "tx/s");
      results.add("business tx/s + Outbox.send, NOTIFY off", median(rates.get("outbox")), "tx/s", "bare", bare);
      results.add("business tx/s + Outbox.send, NOTIFY off, without the CHECK of the message rules",
          median(rates.get("outbox-no-checks")), "tx/s", "bare", bare);
      results.add("the CHECK constraints' cost: Outbox.send with them, against without",
          median(rates.get("outbox")), "tx/s", "without", median(rates.get("outbox-no-checks")));
      results.add("business tx/s + Outbox.send, NOTIFY <= 1 per 10 ms (default)",
          median(rates.get("outbox+notify")), "tx/s", "bare", bare);
      results.add("business tx/s + Outbox.send, NOTIFY on every commit",
          median(rates.get("outbox+notify-every")), "tx/s", "bare", bare);
      results.publish(Path.of("txbox-bench", "results"));
    }
    return 0;
  }

  static PostgresOutboxStore migrated(PostgresOutboxStore store) {
    store.migrate();
    return store;
  }

  /** An outbox, NOTIFY off, without the CHECK constraint of the message rules: to price it. */
  private static PostgresOutboxStore uncheckedStore(BenchDatabase db) throws SQLException {
    PostgresOutboxStore store = migrated(db.store().tablePrefix("unchecked_").notifyOnAppend(false).build());
    db.execute("ALTER TABLE " + store.operator().outboxTable() + " DROP CONSTRAINT unchecked_outbox_valid");
    return store;
  }

  /** The business write: one order row. */
  static void insertOrder(Connection c, long n) throws SQLException {
    try (PreparedStatement insert = c.prepareStatement(
        "INSERT INTO " + BenchDatabase.SCHEMA + ".orders (customer, amount) VALUES (?, ?)")) {
      insert.setString(1, "customer-" + (n % 10_000));
      insert.setBigDecimal(2, BigDecimal.valueOf(n % 100_000, 2));
      insert.executeUpdate();
    }
  }

  static double median(List<Double> values) {
    double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    int mid = sorted.length / 2;
    return sorted.length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  }

  static double percentile(long[] sortedValues, double p) {
    if (sortedValues.length == 0) {
      return Double.NaN;
    }
    int index = (int) Math.ceil(p / 100.0 * sortedValues.length) - 1;
    return sortedValues[Math.max(0, Math.min(sortedValues.length - 1, index))];
  }

  static long[] sorted(List<Long> values) {
    long[] array = values.stream().mapToLong(Long::longValue).toArray();
    Arrays.sort(array);
    return array;
  }
}
