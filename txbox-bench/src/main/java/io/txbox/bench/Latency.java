package io.txbox.bench;

import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.testkit.KafkaBroker;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Commit-to-broker-ack latency at an offered rate, measured by {@link CommitToAck}: writers commit
 * events at a steady pace and the relay stamps each ack. Also the relay's query rate while idle.
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
    PostgresOutboxStore store = db.store().notifyOnAppend(notify).build();
    // Each phase starts from an empty log, so that no relay first drains an earlier phase's events.
    db.execute("TRUNCATE " + store.operator().outboxTable());
    CommitToAck run = new CommitToAck(WRITERS);
    try (Relay relay = relay(store, kafka, run.stamp()).start()) {
      run.write(db.dataSource, Outbox.create(store.writer()), txPerSecond, eventsPerTx, seconds);
      Thread.sleep(3000); // let the last events arrive
    }
    long[] sorted = run.sortedMicros();
    System.out.printf("%s: %,d of %,d events measured%n", label, sorted.length, run.committedCount());
    results.add(label + ": p50", WriteOverhead.percentile(sorted, 50) / 1000.0, "ms");
    results.add(label + ": p99", WriteOverhead.percentile(sorted, 99) / 1000.0, "ms");
    results.add(label + ": max", sorted.length == 0 ? Double.NaN : sorted[sorted.length - 1] / 1000.0, "ms");
  }

  private Relay relay(PostgresOutboxStore store, KafkaBroker kafka, Metrics metrics) {
    return Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .subscription("latency-" + UUID.randomUUID().toString().substring(0, 8))
        .metrics(metrics)
        .batchSize(batchSize)
        .build();
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
