package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.spi.OutboxStore;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * A steady write rate for a long time with the relay and the janitor running, the log's table
 * plain (rows deleted in batches once relayed and past retention) or partitioned by position
 * ({@code --partition-size}: whole partitions dropped): throughput, commit-to-ack latency, the
 * table's and its indexes' size, dead tuples and autovacuum runs, sampled over time. Flat
 * throughput and a size bounded by the retention window are the goal.
 */
@Command(name = "soak", description = "Steady writes for a long time with relay and janitor: throughput, latency, table size, dead tuples and autovacuum over time.")
final class Soak implements Callable<Integer> {
  private static final int WRITERS = 4;

  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--minutes", defaultValue = "30", description = "How long the writers write.")
  int minutes;

  @Option(names = "--rate", defaultValue = "1000", description = "Events per second, one per transaction.")
  int rate;

  @Option(names = "--retention", defaultValue = "PT2M", description = "The janitor's outbox retention (ISO-8601).")
  Duration retention;

  @Option(names = "--janitor-interval", defaultValue = "PT10S", description = "Between janitor runs (ISO-8601).")
  Duration janitorInterval;

  @Option(names = "--partition-size", defaultValue = "0",
      description = "Positions per outbox partition; 0 keeps the plain table the janitor deletes rows from.")
  long partitionSize;

  @Option(names = "--sample-seconds", defaultValue = "30", description = "Time between samples.")
  int sampleSeconds;

  @Option(names = "--mariadb-url", description = "Soak MariaDB's outbox instead, on this server (such as"
      + " jdbc:mariadb://127.0.0.1:3306/?user=root), in a database txbox_soak it creates and drops. The dead rows"
      + " column then shows InnoDB's history list length (undo records waiting for purge), its analogue.")
  String mariaDbUrl;

  @Option(names = "--standalone", description = "Path of txbox.jar: relay with `txbox relay` as its own process,"
      + " with its own janitor (--outbox-retention, --janitor-interval) and nothing else; acks and latency are"
      + " read from its /metrics, and a real Prometheus (when on the PATH) scrapes it with the repository's rules.")
  Path standalone;

  /** One sample of the run. */
  record Sample(double minute, double writtenPerSecond, double ackedPerSecond, double p50Millis, double p99Millis,
      double tableMegabytes, double indexMegabytes, long liveRows, long deadRows, long autovacuums, long deleted,
      int partitions) {}

  final Map<UUID, Long> committed = new ConcurrentHashMap<>();
  /** Whether writers note each event's commit time for the in-process relay's latency. */
  boolean stampCommits = true;
  private final List<Long> windowMicros = new ArrayList<>();
  final AtomicLong written = new AtomicLong();
  private final AtomicLong acked = new AtomicLong();
  final AtomicLong deleted = new AtomicLong();

  @Override
  public Integer call() throws Exception {
    if (standalone != null) {
      return new StandaloneSoak(this).call();
    }
    if (mariaDbUrl != null) {
      return onMariaDb();
    }
    Results results = partitionSize == 0
        ? new Results("soak", "java -jar txbox-bench/target/txbox-bench.jar soak")
        : new Results("soak-partitioned",
            "java -jar txbox-bench/target/txbox-bench.jar soak --partition-size " + partitionSize);
    results.setting("minutes", minutes);
    results.setting("rate", rate);
    results.setting("writers", WRITERS);
    results.setting("retention", retention.toString());
    results.setting("janitorInterval", janitorInterval.toString());
    results.setting("partitionSize", partitionSize);
    results.setting("table", partitionSize == 0
        ? "txbox_outbox as it is: rows deleted in batches by the janitor"
        : "txbox_outbox partitioned by position: the janitor drops whole partitions");
    List<Sample> samples = new ArrayList<>();
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, 12); KafkaBroker kafka = KafkaBroker.start("1g")) {
      kafka.createTopic("soak", 8);
      PostgresOutboxStore store = db.store().outboxPartitionSize(partitionSize).build();
      store.migrate();
      results.setting("autovacuum", db.setting("autovacuum"));
      Janitor janitor = Janitor.builder(store.janitor()).outboxRetention(retention).build();
      AtomicBoolean writing = new AtomicBoolean(true);
      List<Thread> writers = startWriters(db.dataSource, Outbox.create(store.writer()), writing);
      try (Relay relay = relay(store.relay(), kafka).start()) {
        run(janitor, samples, (minute, writtenInWindow, ackedInWindow) ->
            sample(db, store, minute, writtenInWindow, ackedInWindow));
        writing.set(false);
        for (Thread w : writers) {
          w.join();
        }
      }
    }
    summarize(results, samples);
    results.setting("samples", samples);
    results.publish(Path.of("txbox-bench", "results"));
    return 0;
  }

  /**
   * The same run on MariaDB: the janitor's deletes are InnoDB's undo records for purge, where
   * PostgreSQL has dead tuples for VACUUM; the history list length is sampled in their place.
   */
  private int onMariaDb() throws Exception {
    Results results = new Results("soak-mariadb", "java -jar txbox-bench/target/txbox-bench.jar soak --mariadb-url "
        + mariaDbUrl.replaceAll("password=[^&]*", "password=***"));
    results.setting("minutes", minutes);
    results.setting("rate", rate);
    results.setting("writers", WRITERS);
    results.setting("retention", retention.toString());
    results.setting("janitorInterval", janitorInterval.toString());
    results.setting("table", "txbox_outbox on MariaDB: rows deleted in batches by the janitor; dead rows = history list");
    List<Sample> samples = new ArrayList<>();
    try (HikariDataSource server = TestDatabase.pool(mariaDbUrl, 1); KafkaBroker kafka = KafkaBroker.start("1g")) {
      execute(server, "DROP DATABASE IF EXISTS txbox_soak");
      execute(server, "CREATE DATABASE txbox_soak");
      try (HikariDataSource db = TestDatabase.pool(mariaDbUrl.replace("3306/", "3306/txbox_soak"), 12)) {
        kafka.createTopic("soak", 8);
        MariaDbOutboxStore store = MariaDbOutboxStore.builder(db).build();
        store.migrate();
        Janitor janitor = Janitor.builder(store.janitor()).outboxRetention(retention).build();
        AtomicBoolean writing = new AtomicBoolean(true);
        List<Thread> writers = startWriters(db, Outbox.create(store.writer()), writing);
        try (Relay relay = relay(store.relay(), kafka).start()) {
          run(janitor, samples, (minute, writtenInWindow, ackedInWindow) ->
              sampleMariaDb(db, minute, writtenInWindow, ackedInWindow));
          writing.set(false);
          for (Thread w : writers) {
            w.join();
          }
        }
      } finally {
        execute(server, "DROP DATABASE IF EXISTS txbox_soak");
      }
    }
    summarize(results, samples);
    results.setting("samples", samples);
    results.publish(Path.of("txbox-bench", "results"));
    return 0;
  }

  /** A sample of the run: counts in the window so far, read now. */
  @FunctionalInterface
  private interface Sampler {
    Sample take(double minute, long writtenInWindow, long ackedInWindow) throws SQLException;
  }

  /** Runs the janitor and takes samples at their intervals until the minutes are over. */
  private void run(Janitor janitor, List<Sample> samples, Sampler sampler) throws SQLException {
    long start = System.nanoTime();
    long end = start + Duration.ofMinutes(minutes).toNanos();
    long nextJanitor = start + janitorInterval.toNanos();
    long nextSample = start + Duration.ofSeconds(sampleSeconds).toNanos();
    long lastWritten = 0;
    long lastAcked = 0;
    while (System.nanoTime() < end) {
      LockSupport.parkNanos(Math.min(nextJanitor, nextSample) - System.nanoTime());
      if (System.nanoTime() >= nextJanitor) {
        deleted.addAndGet(janitor.runOnce().outboxEvents());
        nextJanitor += janitorInterval.toNanos();
      }
      if (System.nanoTime() >= nextSample) {
        Sample s = sampler.take((System.nanoTime() - start) / 60e9, written.get() - lastWritten,
            acked.get() - lastAcked);
        lastWritten = written.get();
        lastAcked = acked.get();
        samples.add(s);
        print(s, samples.size() == 1);
        nextSample += Duration.ofSeconds(sampleSeconds).toNanos();
      }
    }
  }

  private Sample sampleMariaDb(HikariDataSource db, double minute, long writtenInWindow, long ackedInWindow)
      throws SQLException {
    long[] micros = windowMicros();
    try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
      s.execute("ANALYZE TABLE txbox_outbox"); // InnoDB's sizes are statistics: refreshed, not guessed
      long rows;
      try (ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM txbox_outbox")) {
        rs.next();
        rows = rs.getLong(1);
      }
      long history;
      try (ResultSet rs = s.executeQuery(
          "SELECT count FROM information_schema.INNODB_METRICS WHERE name = 'trx_rseg_history_len'")) {
        history = rs.next() ? rs.getLong(1) : -1;
      }
      try (ResultSet rs = s.executeQuery("SELECT data_length, index_length FROM information_schema.TABLES"
          + " WHERE table_schema = DATABASE() AND table_name = 'txbox_outbox'")) {
        rs.next();
        return new Sample(Math.round(minute * 100) / 100.0, writtenInWindow / (double) sampleSeconds,
            ackedInWindow / (double) sampleSeconds, percentile(micros, 50), percentile(micros, 99),
            rs.getLong(1) / 1e6, rs.getLong(2) / 1e6, rows, history, 0, deleted.get(), 1);
      }
    }
  }

  private static void execute(HikariDataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private long[] windowMicros() {
    synchronized (windowMicros) {
      long[] micros = WriteOverhead.sorted(windowMicros);
      windowMicros.clear();
      return micros;
    }
  }

  private static double percentile(long[] micros, int p) {
    return micros.length == 0 ? Double.NaN : WriteOverhead.percentile(micros, p) / 1000.0;
  }

  /** First and last fifth of the run side by side: throughput, latency and size. */
  void summarize(Results results, List<Sample> samples) {
    int fifth = Math.max(1, samples.size() / 5);
    List<Sample> first = samples.subList(0, fifth);
    List<Sample> last = samples.subList(samples.size() - fifth, samples.size());
    results.add("acked per second, last fifth of the run", mean(last, Sample::ackedPerSecond), "1/s",
        "first fifth", mean(first, Sample::ackedPerSecond));
    results.add("latency p99, last fifth", mean(last, Sample::p99Millis), "ms", "first fifth",
        mean(first, Sample::p99Millis));
    results.add("table size, last fifth", mean(last, Sample::tableMegabytes), "MB", "first fifth",
        mean(first, Sample::tableMegabytes));
    results.add("index size, last fifth", mean(last, Sample::indexMegabytes), "MB", "first fifth",
        mean(first, Sample::indexMegabytes));
    results.add("largest table size", samples.stream().mapToDouble(Sample::tableMegabytes).max().orElse(0), "MB");
    results.add("most dead rows in a sample", samples.stream().mapToLong(Sample::deadRows).max().orElse(0), "rows");
    results.add("autovacuum runs on the table", samples.isEmpty() ? 0 : samples.get(samples.size() - 1).autovacuums(),
        "runs");
    results.add("rows deleted by the janitor", deleted.get(), "rows");
  }

  private static double mean(List<Sample> samples, java.util.function.ToDoubleFunction<Sample> f) {
    return samples.stream().mapToDouble(f).average().orElse(Double.NaN);
  }

  private Sample sample(BenchDatabase db, PostgresOutboxStore store, double minute, long writtenInWindow,
      long ackedInWindow) throws SQLException {
    long[] micros = windowMicros();
    return sample(db, store, minute, writtenInWindow, ackedInWindow, percentile(micros, 50), percentile(micros, 99));
  }

  /** A sample with latency measured elsewhere: the table's size and tuples, read now. */
  Sample sample(BenchDatabase db, PostgresOutboxStore store, double minute, long writtenInWindow,
      long ackedInWindow, double p50Millis, double p99Millis) throws SQLException {
    // Summed over the partitions, if any (dropped partitions take their counts with them).
    try (Connection c = db.dataSource.getConnection(); PreparedStatement p = c.prepareStatement(
        "SELECT sum(pg_table_size(t.relid)), sum(pg_indexes_size(t.relid)), coalesce(sum(s.n_live_tup), 0),"
            + " coalesce(sum(s.n_dead_tup), 0), coalesce(sum(s.autovacuum_count), 0), count(s.relid)"
            + " FROM (SELECT relid FROM pg_partition_tree(?::regclass) UNION SELECT ?::regclass) AS t"
            + " LEFT JOIN pg_stat_user_tables s ON s.relid = t.relid")) {
      p.setString(1, store.operator().outboxTable());
      p.setString(2, store.operator().outboxTable());
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return new Sample(Math.round(minute * 100) / 100.0, writtenInWindow / (double) sampleSeconds,
            ackedInWindow / (double) sampleSeconds, p50Millis, p99Millis, rs.getLong(1) / 1e6, rs.getLong(2) / 1e6, rs.getLong(3), rs.getLong(4), rs.getLong(5), deleted.get(),
            rs.getInt(6));
      }
    }
  }

  static void print(Sample s, boolean header) {
    if (header) {
      System.out.printf("%7s %9s %9s %8s %8s %9s %9s %10s %9s %6s %11s %6s%n", "minute", "written/s", "acked/s",
          "p50 ms", "p99 ms", "table MB", "index MB", "live rows", "dead rows", "autovac", "deleted", "tables");
    }
    System.out.printf("%7.2f %9.0f %9.0f %8.1f %8.1f %9.1f %9.1f %10d %9d %6d %11d %6d%n", s.minute(),
        s.writtenPerSecond(), s.ackedPerSecond(), s.p50Millis(), s.p99Millis(), s.tableMegabytes(),
        s.indexMegabytes(), s.liveRows(), s.deadRows(), s.autovacuums(), s.deleted(), s.partitions());
  }

  private Relay relay(OutboxStore store, KafkaBroker kafka) {
    Metrics stamp = new Metrics() {
      @Override
      public void published(String subscription, List<Message> acknowledged) {
        long now = System.nanoTime();
        acked.addAndGet(acknowledged.size());
        List<Long> micros = new ArrayList<>(acknowledged.size());
        for (Message m : acknowledged) {
          Long at = committed.remove(m.id());
          if (at != null) {
            micros.add((now - at) / 1000);
          }
        }
        synchronized (windowMicros) {
          windowMicros.addAll(micros);
        }
      }
    };
    return Relay.builder(store, KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .metrics(stamp).build();
  }

  /** Writers committing one event per transaction at a fixed pace together. */
  List<Thread> startWriters(DataSource dataSource, Outbox outbox, AtomicBoolean writing) {
    long interval = 1_000_000_000L * WRITERS / rate;
    List<Thread> writers = new ArrayList<>();
    for (int w = 0; w < WRITERS; w++) {
      long offset = interval * w / WRITERS;
      Thread t = new Thread(() -> {
        try (Connection c = dataSource.getConnection()) {
          c.setAutoCommit(false);
          for (long next = System.nanoTime() + offset; writing.get(); next += interval) {
            LockSupport.parkNanos(next - System.nanoTime());
            Message m = Events.orderPlaced("soak", next);
            outbox.send(c, m);
            c.commit();
            if (stampCommits) {
              committed.put(m.id(), System.nanoTime());
            }
            written.incrementAndGet();
          }
        } catch (Exception e) {
          throw new IllegalStateException("a writer failed", e);
        }
      }, "soak-writer-" + w);
      t.start();
      writers.add(t);
    }
    return writers;
  }
}
