package io.txbox.bench;

import io.txbox.Delivery;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.cdc.LogicalRelay;
import io.txbox.cdc.LogicalReplication;
import io.txbox.cdc.WalOutboxStore;
import io.txbox.kafka.KafkaExactlyOncePublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.spi.Publisher;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Logical decoding, on a PostgreSQL with {@code wal_level = logical} (by default an embedded one,
 * with fsync, synchronous commit and full-page writes on, as a production server): what each
 * write mode costs a business transaction, how fast a {@link LogicalRelay} drains a slot into
 * Kafka next to Kafka's own ProducerPerformance, and commit → broker-ack latency at fixed rates.
 */
@Command(name = "logical", description = "Logical decoding: write overhead by mode, relay from a slot into Kafka,"
    + " commit-to-ack latency.")
final class LogicalBench implements java.util.concurrent.Callable<Integer> {
  static final int WARM_UP_SECONDS = 3;

  // The relay throughput figures, by name
  private static final String PRODUCER_PERFORMANCE = "ProducerPerformance";
  private static final String PUBLISHER_ONE = "KafkaPublisher from memory, one batch in flight";
  private static final String PUBLISHER_TWO = "two KafkaPublishers from memory, one batch in flight each";
  private static final String FROM_WAL = "logical relay from WAL messages into Kafka, acked and confirmed";
  private static final String FROM_ROWS = "logical relay from outbox rows into Kafka, acked and confirmed";
  private static final String POLLED = "table relay (polling) into Kafka, acked and checkpointed";

  @Option(names = "--jdbc-url", description = "A server with wal_level=logical; default: an embedded one")
  String jdbcUrl;

  @Option(names = "--threads", defaultValue = "8", description = "Writer threads of the write test")
  int threads;

  @Option(names = "--seconds", defaultValue = "10", description = "Length of one write measurement")
  int seconds;

  @Option(names = "--rounds", defaultValue = "3")
  int rounds;

  @Option(names = "--events", defaultValue = "300000", description = "Backlog the relay drains")
  int events;

  @Option(names = "--events-per-transaction", defaultValue = "1000",
      description = "How many of the backlog's events the exactly-once part writes in one transaction (1 to 1000):"
          + " the note exactly-once delivery keeps at the broker names every transaction. Default: ${DEFAULT-VALUE}")
  int eventsPerTransaction;

  @Option(names = "--latency-seconds", defaultValue = "20", description = "Length of each latency run")
  int latencySeconds;

  @Option(names = "--batch-size", defaultValue = "" + LogicalRelay.DEFAULT_BATCH_SIZE, description = "The relay's")
  int batchSize;

  @Option(names = "--parts", split = ",", defaultValue = "write,relay,latency",
      description = "Which measurements: write, relay, latency, exactly-once (the relay from outbox rows,"
          + " exactly-once against at-least-once). Default: ${DEFAULT-VALUE}")
  List<String> parts;

  @Override
  public Integer call() throws Exception {
    if (eventsPerTransaction < 1 || eventsPerTransaction > 1000) {
      throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
          "invalid --events-per-transaction " + eventsPerTransaction + ": give 1 to 1000");
    }
    try (Server server = Server.start(jdbcUrl);
        BenchDatabase db = new BenchDatabase(server.url(), threads + 4); KafkaBench kafka = new KafkaBench(8)) {
      Results results = new Results("logical", "java -jar txbox-bench/target/txbox-bench.jar logical");
      results.setting("server", server.description());
      results.setting("batchSize", batchSize);
      if (parts.contains("write")) {
        new LogicalWrites(threads, seconds, rounds).measure(db, results);
      }
      if (parts.contains("relay")) {
        relayThroughput(db, server.url(), kafka, results);
      }
      if (parts.contains("latency")) {
        latency(db, server.url(), kafka, results);
      }
      if (parts.contains("exactly-once")) {
        exactlyOnce(db, server.url(), kafka, results);
      }
      results.publish(Path.of("txbox-bench", "results"));
    }
    return 0;
  }

  /** The server the logical benchmarks run on: the one at {@code --jdbc-url}, or an embedded one. */
  record Server(String url, String description, EmbeddedPostgres embedded) implements AutoCloseable {
    static Server start(String jdbcUrl) throws java.io.IOException {
      if (jdbcUrl != null) {
        return new Server(jdbcUrl, "given by --jdbc-url", null);
      }
      System.out.println("starting an embedded PostgreSQL with wal_level=logical...");
      EmbeddedPostgres embedded = EmbeddedPostgres.builder()
          .setServerConfig("wal_level", "logical")
          .setServerConfig("fsync", "on")
          .setServerConfig("synchronous_commit", "on")
          .setServerConfig("full_page_writes", "on")
          .setServerConfig("max_wal_size", "4GB")
          .setServerConfig("max_connections", "100")
          .start();
      return new Server(embedded.getJdbcUrl("postgres", "postgres"),
          "embedded PostgreSQL 17, fsync and synchronous_commit on", embedded);
    }

    @Override
    public void close() throws java.io.IOException {
      if (embedded != null) {
        embedded.close();
      }
    }
  }

  /**
   * Rounds of: the relays' publisher alone, fed from memory (one batch in flight, as both relays
   * publish, then two), and three drains of the same backlog (the logical relay from WAL messages
   * and from outbox rows, the polling table relay), each round between two runs of
   * ProducerPerformance whose mean is the round's reference. A first ProducerPerformance run warms
   * the fresh broker up and is not counted: it was the slowest of every run.
   */
  private void relayThroughput(BenchDatabase db, String url, KafkaBench kafka, Results results) throws Exception {
    PostgresOutboxStore rowsStore = WriteOverhead.migrated(db.store().tablePrefix("rows_").notifyOnAppend(false).build());
    PostgresOutboxStore tableStore = WriteOverhead.migrated(db.store().tablePrefix("poll_").notifyOnAppend(false).build());
    kafka.bareRate(events);
    double before = kafka.bareRate(events);
    Map<String, List<Double>> shares = new LinkedHashMap<>();
    Map<String, List<Double>> rates = new LinkedHashMap<>();
    rates.put(PRODUCER_PERFORMANCE, new ArrayList<>(List.of(before)));
    for (int round = 1; round <= rounds; round++) {
      Map<String, Double> measured = new LinkedHashMap<>();
      measured.put(PUBLISHER_ONE, kafka.publisherRate(events, batchSize, 1));
      measured.put(PUBLISHER_TWO, kafka.publisherRate(events, batchSize, 2));
      measured.put(FROM_WAL, drainWal(db, url, kafka));
      measured.put(FROM_ROWS, drainRows(db, rowsStore, url, kafka));
      backlog(db, Outbox.create(tableStore.writer()));
      measured.put(POLLED, drainByPolling(tableStore, kafka, events));
      double after = kafka.bareRate(events);
      rates.get(PRODUCER_PERFORMANCE).add(after);
      double reference = (before + after) / 2;
      System.out.printf("round %d: ProducerPerformance %,.0f / %,.0f msgs/s%n", round, before, after);
      for (Map.Entry<String, Double> m : measured.entrySet()) {
        double share = m.getValue() / reference;
        System.out.printf("round %d: %-70s %,10.0f msgs/s  %.2f%n", round, m.getKey(), m.getValue(), share);
        rates.computeIfAbsent(m.getKey(), n -> new ArrayList<>()).add(m.getValue());
        shares.computeIfAbsent(m.getKey(), n -> new ArrayList<>()).add(share);
      }
      before = after;
    }
    results.setting("backlogEvents", events);
    results.setting("relayRounds", rounds);
    List<Double> reference = rates.get(PRODUCER_PERFORMANCE);
    results.add("relay reference: ProducerPerformance, median of " + reference.size() + " runs (" + range(reference, "%,.0f")
        + ")", WriteOverhead.median(reference), "msgs/s");
    shares.forEach((name, values) -> {
      results.add(name + ", median of rounds", WriteOverhead.median(rates.get(name)), "msgs/s");
      results.add(name + ", share of the round's ProducerPerformance: median (" + range(values, "%.2f") + ")",
          WriteOverhead.median(values), "share");
    });
  }

  /**
   * Rounds of two drains of the same backlog of outbox rows, each from a slot of its own made just
   * before the backlog was written: at least once and exactly once, alternating which goes first.
   * The relay's CPU per event is this process's CPU time over the drain (the database and the
   * broker run in processes of their own).
   */
  private void exactlyOnce(BenchDatabase db, String url, KafkaBench kafka, Results results) throws Exception {
    PostgresOutboxStore store = WriteOverhead.migrated(db.store().tablePrefix("eos_").notifyOnAppend(false).build());
    results.setting("exactlyOnceEvents", events);
    results.setting("exactlyOnceEventsPerTransaction", eventsPerTransaction);
    for (int round = 1; round <= rounds; round++) {
      double[][] measured = new double[2][];
      for (int turn = 0; turn < 2; turn++) {
        boolean eos = (turn == 0) == (round % 2 == 0);
        String slot = "bench_eos_" + round + "_" + turn;
        LogicalReplication replication = LogicalReplication.builder(db.dataSource, store).slot(slot).publication(slot)
            .build();
        replication.migrate();
        try {
          backlog(db, Outbox.create(store.writer()), events, eventsPerTransaction, BenchBroker.RELAY_DESTINATION);
          measured[eos ? 1 : 0] = drainWithCpu(replication, url, kafka, eos, slot);
        } finally {
          replication.drop();
        }
      }
      System.out.printf("round %d: rows, exactly-once %,.0f msgs/s %.1f µs CPU/event; at-least-once %,.0f msgs/s"
          + " %.1f µs CPU/event; ratio %.2f%n", round, measured[1][0], measured[1][1], measured[0][0], measured[0][1],
          measured[1][0] / measured[0][0]);
      results.add("round " + round + ": logical relay from outbox rows, exactly-once drain", measured[1][0], "msgs/s",
          "at-least-once drain", measured[0][0]);
      results.add("round " + round + ": logical relay from outbox rows, exactly-once relay CPU per event",
          measured[1][1], "µs", "at-least-once", measured[0][1]);
    }
  }

  /** One drain's rate and this process's CPU time per event over it. */
  private double[] drainWithCpu(LogicalReplication replication, String url, KafkaBench kafka, boolean eos,
      String slot) throws Exception {
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    Publisher publisher = eos
        ? KafkaExactlyOncePublisher.builder().bootstrapServers(kafka.bootstrapServers())
            .transactionalIdPrefix("bench-" + slot + "-").build()
        : kafka.publisher();
    CountDownLatch done = new CountDownLatch(1);
    long cpuStart = os.getProcessCpuTime();
    long start = System.nanoTime();
    try (LogicalRelay relay = LogicalRelay.builder(replication, publisher).connection(url, new Properties())
        .batchSize(batchSize).delivery(eos ? Delivery.EXACTLY_ONCE : Delivery.AT_LEAST_ONCE)
        .metrics(counting(events, done)).build().start()) {
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException("the relay did not drain the slot in 30 minutes");
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      return new double[] {events / seconds, (os.getProcessCpuTime() - cpuStart) / 1e3 / events};
    }
  }

  private static String range(List<Double> values, String format) {
    return String.format(format, Collections.min(values)) + "–" + String.format(format, Collections.max(values));
  }

  private double drainWal(BenchDatabase db, String url, KafkaBench kafka) throws Exception {
    LogicalReplication fromWal = replication(db, "bench_wal");
    fromWal.migrate();
    try {
      backlog(db, Outbox.create(WalOutboxStore.create()));
      return drain(fromWal, url, kafka, events);
    } finally {
      fromWal.drop();
    }
  }

  private double drainRows(BenchDatabase db, PostgresOutboxStore rowsStore, String url, KafkaBench kafka) throws Exception {
    LogicalReplication fromRows = LogicalReplication.builder(db.dataSource, rowsStore)
        .slot("bench_rows").publication("bench_rows").build();
    fromRows.migrate();
    try {
      backlog(db, Outbox.create(rowsStore.writer()));
      return drain(fromRows, url, kafka, events);
    } finally {
      fromRows.drop();
    }
  }

  private double drainByPolling(PostgresOutboxStore store, KafkaBench kafka, int count) throws Exception {
    CountDownLatch done = new CountDownLatch(1);
    long start = System.nanoTime();
    try (Relay relay = Relay.builder(store.relay(), kafka.publisher()).subscription("bench").metrics(counting(count, done))
        .build().start()) {
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException("the table relay did not drain the backlog in 30 minutes");
      }
      return count / ((System.nanoTime() - start) / 1e9);
    }
  }

  private static Metrics counting(int count, CountDownLatch done) {
    AtomicLong published = new AtomicLong();
    return new Metrics() {
      @Override
      public void published(String subscription, List<Message> acknowledged) {
        if (published.addAndGet(acknowledged.size()) >= count) {
          done.countDown();
        }
      }
    };
  }

  void backlog(BenchDatabase db, Outbox outbox) throws Exception {
    backlog(db, outbox, events, BenchBroker.RELAY_DESTINATION);
  }

  /** Commits {@code count} events for {@code destination} in transactions of 1,000. */
  static void backlog(BenchDatabase db, Outbox outbox, int count, String destination) throws Exception {
    backlog(db, outbox, count, 1000, destination);
  }

  /** Commits {@code count} events for {@code destination} in transactions of {@code perTransaction}. */
  static void backlog(BenchDatabase db, Outbox outbox, int count, int perTransaction, String destination)
      throws Exception {
    for (int done = 0; done < count; done += perTransaction) {
      try (Connection c = db.dataSource.getConnection()) {
        c.setAutoCommit(false);
        List<Message> batch = new ArrayList<>(perTransaction);
        for (int i = done; i < Math.min(count, done + perTransaction); i++) {
          batch.add(Events.orderPlaced(destination, i));
        }
        outbox.send(c, batch);
        c.commit();
      }
    }
  }

  double drain(LogicalReplication replication, String url, KafkaBench kafka, int count) throws Exception {
    CountDownLatch done = new CountDownLatch(1);
    long start = System.nanoTime();
    try (LogicalRelay relay = relay(replication, url, kafka, counting(count, done)).start()) {
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException("the relay did not drain the slot in 30 minutes");
      }
      return count / ((System.nanoTime() - start) / 1e9);
    }
  }

  /**
   * Commit → broker ack at fixed rates; 10,000/s as 1,000 transactions of ten events each. Each
   * rate gets a new slot and relay; what is committed in its first seconds is not recorded.
   */
  private void latency(BenchDatabase db, String url, KafkaBench kafka, Results results) throws Exception {
    results.setting("latencySecondsPerRate", latencySeconds);
    PostgresOutboxStore rowsStore = WriteOverhead.migrated(db.store().tablePrefix("lat_").notifyOnAppend(false).build());
    // A fresh broker and JVM make the first run slow whatever it measures: warm both up first.
    latency(db, url, kafka, replication(db, "bench_latency_warm_up"), Outbox.create(WalOutboxStore.create()),
        "warm-up", 1000, 1);
    for (boolean rows : new boolean[] {true, false}) {
      for (int[] shape : new int[][] {{1000, 1}, {10_000, 10}}) {
        String slot = "bench_latency_" + (rows ? "rows_" : "wal_") + shape[0];
        LogicalReplication replication = rows
            ? LogicalReplication.builder(db.dataSource, rowsStore).slot(slot).publication(slot).build()
            : replication(db, slot);
        Outbox outbox = Outbox.create(rows ? rowsStore.writer() : WalOutboxStore.create());
        String mode = rows ? "outbox rows" : "WAL messages";
        double[] p50p99 = latency(db, url, kafka, replication, outbox, mode, shape[0], shape[1]);
        results.add("latency commit -> Kafka ack, " + mode + ", at " + shape[0] + " events/s, p50", p50p99[0], "ms");
        results.add("latency commit -> Kafka ack, " + mode + ", at " + shape[0] + " events/s, p99", p50p99[1], "ms");
      }
    }
  }

  /** Commit → broker ack through a new relay on {@code replication}: p50 and p99 in ms. */
  double[] latency(BenchDatabase db, String url, KafkaBench kafka, LogicalReplication replication, Outbox outbox,
      String mode, int rate, int perTransaction) throws Exception {
    replication.migrate();
    Map<UUID, Long> committedAt = new ConcurrentHashMap<>();
    List<Long> latencies = java.util.Collections.synchronizedList(new ArrayList<>());
    Metrics timing = new Metrics() {
      @Override
      public void published(String subscription, List<Message> acknowledged) {
        long now = System.nanoTime();
        for (Message m : acknowledged) {
          Long at = committedAt.remove(m.id());
          if (at != null) {
            latencies.add(now - at);
          }
        }
      }
    };
    try (LogicalRelay relay = relay(replication, url, kafka, timing).start()) {
      write(db, outbox, rate / perTransaction, perTransaction, committedAt);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (!committedAt.isEmpty() && System.nanoTime() < deadline) {
        LockSupport.parkNanos(10_000_000);
      }
    }
    replication.drop();
    long[] sorted = WriteOverhead.sorted(new ArrayList<>(latencies));
    double p50 = WriteOverhead.percentile(sorted, 50) / 1e6;
    double p99 = WriteOverhead.percentile(sorted, 99) / 1e6;
    System.out.printf("%s, %,d events/s (%d per transaction): %,d delivered, p50 %.1f ms, p99 %.1f ms, max %.1f ms%n",
        mode, rate, perTransaction, sorted.length, p50, p99, sorted.length == 0 ? Double.NaN : sorted[sorted.length - 1] / 1e6);
    return new double[] {p50, p99};
  }

  /** Commits {@code transactionsPerSecond} transactions of {@code events} events, paced, on two threads. */
  private void write(BenchDatabase db, Outbox outbox, int transactionsPerSecond, int eventsEach,
      Map<UUID, Long> committedAt) throws Exception {
    int writers = 2;
    long intervalNanos = TimeUnit.SECONDS.toNanos(1) * writers / transactionsPerSecond;
    long recordFrom = System.nanoTime() + TimeUnit.SECONDS.toNanos(WARM_UP_SECONDS);
    long end = recordFrom + TimeUnit.SECONDS.toNanos(latencySeconds);
    List<Thread> threads = new ArrayList<>();
    AtomicLong n = new AtomicLong();
    for (int w = 0; w < writers; w++) {
      Thread t = new Thread(() -> pace(intervalNanos, end, () -> {
        try (Connection c = db.dataSource.getConnection()) {
          c.setAutoCommit(false);
          List<Message> batch = new ArrayList<>(eventsEach);
          for (int i = 0; i < eventsEach; i++) {
            batch.add(Events.orderPlaced(BenchBroker.RELAY_DESTINATION, n.incrementAndGet()));
          }
          outbox.send(c, batch);
          c.commit();
          long now = System.nanoTime();
          if (now >= recordFrom) { // the first seconds warm the new relay's producer up
            batch.forEach(m -> committedAt.put(m.id(), now));
          }
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }));
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) {
      t.join();
    }
  }

  private static void pace(long intervalNanos, long end, Runnable work) {
    long next = System.nanoTime();
    while (next < end) {
      work.run();
      next += intervalNanos;
      long wait = next - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
      }
    }
  }

  private static LogicalReplication replication(BenchDatabase db, String slot) {
    PostgresOutboxStore store = db.store().build();
    return LogicalReplication.builder(db.dataSource, store).slot(slot).publication(slot).build();
  }

  LogicalRelay relay(LogicalReplication replication, String url, KafkaBench kafka, Metrics metrics) {
    return LogicalRelay.builder(replication, kafka.publisher())
        .connection(url, new Properties())
        .batchSize(batchSize)
        .metrics(metrics)
        .build();
  }

}
