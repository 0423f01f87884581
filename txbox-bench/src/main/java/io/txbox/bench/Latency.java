package io.txbox.bench;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.spi.Metrics;
import io.txbox.testkit.KafkaBroker;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Commit-to-broker-ack latency at an offered rate: writers commit events at a steady pace; the
 * relay's {@link Metrics#published} callback, which runs after the broker's ack and the
 * checkpoint, marks the end. Also the relay's query rate while idle.
 */
@Command(name = "latency", description = "Commit-to-broker-ack latency at 1,000 and 10,000 events/s, with and without NOTIFY, and the idle query rate.")
final class Latency implements Callable<Integer> {
  private static final int WRITERS = 4;

  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--seconds", defaultValue = "20", description = "Length of each measurement.")
  int seconds;

  @Option(names = "--batch-size", defaultValue = "" + Relay.DEFAULT_BATCH_SIZE)
  int batchSize;

  private final Map<UUID, Long> committed = new ConcurrentHashMap<>();
  private final Map<UUID, Long> acked = new ConcurrentHashMap<>();

  @Override
  public Integer call() throws Exception {
    Results results = new Results("latency", "java -jar txbox-bench/target/txbox-bench.jar latency");
    results.setting("writers", WRITERS);
    results.setting("secondsPerMeasurement", seconds);
    results.setting("relay", "defaults (idle interval 500 ms)");
    results.setting("batchSize", batchSize);
    results.setting("10000/s", "1,000 transactions/s of 10 events each");
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, 12); KafkaBroker kafka = KafkaBroker.start("1g")) {
      kafka.createTopic("latency", 8);
      db.store().build().migrate();
      // A fresh broker and JVM make the first phase slow whatever it measures: warm both up first.
      measure(db, kafka, true, 1_000, 10, new Results("warm-up", ""), "warm-up");
      measure(db, kafka, true, 1_000, 1, results, "NOTIFY on (default), 1,000 events/s");
      measure(db, kafka, false, 1_000, 1, results, "polling only, 1,000 events/s");
      measure(db, kafka, true, 1_000, 10, results, "NOTIFY on (default), 10,000 events/s");
      measure(db, kafka, false, 1_000, 10, results, "polling only, 10,000 events/s");
      measure(db, kafka, true, 2, 1, results, "NOTIFY on (default), sporadic: 2 events/s");
      measure(db, kafka, false, 2, 1, results, "polling only, sporadic: 2 events/s");
      idleQueryRate(db, kafka, results);
    }
    results.publish(Path.of("txbox-bench", "results"));
    return 0;
  }

  private void measure(BenchDatabase db, KafkaBroker kafka, boolean notify, int txPerSecond, int eventsPerTx,
      Results results, String label) throws Exception {
    committed.clear();
    acked.clear();
    PostgresOutboxStore store = db.store().notifyOnAppend(notify).build();
    // Each phase starts from an empty log, so that no relay first drains an earlier phase's events.
    db.execute("TRUNCATE " + store.outboxTable());
    Metrics stamp = new Metrics() {
      @Override
      public void published(String subscription, List<Message> acknowledged) {
        long now = System.nanoTime();
        acknowledged.forEach(m -> acked.put(m.id(), now));
      }
    };
    try (Relay relay = relay(store, kafka, stamp).start()) {
      write(db, Outbox.create(store), txPerSecond, eventsPerTx);
      Thread.sleep(3000); // let the last events arrive
    }
    List<Long> micros = new ArrayList<>();
    committed.forEach((id, at) -> {
      Long ack = acked.get(id);
      if (ack != null) {
        micros.add(Math.max(0, (ack - at) / 1000));
      }
    });
    long[] sorted = WriteOverhead.sorted(micros);
    System.out.printf("%s: %,d of %,d events measured%n", label, sorted.length, committed.size());
    results.add(label + ": p50", WriteOverhead.percentile(sorted, 50) / 1000.0, "ms");
    results.add(label + ": p99", WriteOverhead.percentile(sorted, 99) / 1000.0, "ms");
    results.add(label + ": max", sorted.length == 0 ? Double.NaN : sorted[sorted.length - 1] / 1000.0, "ms");
  }

  private Relay relay(PostgresOutboxStore store, KafkaBroker kafka, Metrics metrics) {
    return Relay.builder(store, KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .subscription("latency-" + UUID.randomUUID().toString().substring(0, 8))
        .metrics(metrics)
        .batchSize(batchSize)
        .build();
  }

  /** Writers commit at a fixed pace; the first second is warm-up and not recorded. */
  private void write(BenchDatabase db, Outbox outbox, int txPerSecond, int eventsPerTx) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(WRITERS);
    long intervalNanos = 1_000_000_000L * WRITERS / txPerSecond;
    long start = System.nanoTime();
    long end = start + seconds * 1_000_000_000L;
    long recordFrom = start + 1_000_000_000L;
    List<Future<?>> writers = new ArrayList<>();
    for (int w = 0; w < WRITERS; w++) {
      long offset = intervalNanos * w / WRITERS;
      writers.add(pool.submit(() -> {
        try (Connection c = db.dataSource.getConnection()) {
          c.setAutoCommit(false);
          for (long next = start + offset; next < end; next += intervalNanos) {
            LockSupport.parkNanos(next - System.nanoTime());
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < eventsPerTx; i++) {
              batch.add(Events.orderPlaced("latency", next));
            }
            outbox.send(c, batch);
            c.commit();
            long now = System.nanoTime();
            if (now >= recordFrom) {
              batch.forEach(m -> committed.put(m.id(), now));
            }
          }
        }
        return null;
      }));
    }
    for (Future<?> writer : writers) {
      writer.get();
    }
    pool.shutdown();
  }

  /**
   * Transactions per second an idle relay starts: every store operation borrows one connection
   * for one transaction, so counting borrowed connections counts them (the LISTEN connection is
   * borrowed once and held).
   */
  private void idleQueryRate(BenchDatabase db, KafkaBroker kafka, Results results) throws Exception {
    AtomicLong borrowed = new AtomicLong();
    DataSource counting = (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
        new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
          if (method.getName().equals("getConnection")) {
            borrowed.incrementAndGet();
          }
          try {
            return method.invoke(db.dataSource, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
    PostgresOutboxStore store = PostgresOutboxStore.builder(counting).schema(BenchDatabase.SCHEMA).build();
    try (Relay relay = relay(store, kafka, Metrics.NONE).start()) {
      Thread.sleep(3000);
      long before = borrowed.get();
      Thread.sleep(seconds * 1000L);
      results.add("idle relay: transactions (queries) per second", (borrowed.get() - before) / (double) seconds, "1/s");
    }
  }
}
