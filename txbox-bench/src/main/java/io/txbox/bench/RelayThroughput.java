package io.txbox.bench;

import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.spi.Metrics;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.internal.ChildProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Drains a backlog of events of ~300 bytes into Kafka, acknowledged and checkpointed, next to
 * Kafka's own ProducerPerformance (same record size, acks=all, same broker), run before and after.
 */
@Command(name = "relay", description = "Relay throughput: drain a backlog into Kafka, next to ProducerPerformance.")
final class RelayThroughput implements Callable<Integer> {
  private static final Pattern RATE = Pattern.compile("(\\d+) records sent, ([\\d.]+) records/sec");

  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--events", defaultValue = "1000000")
  int events;

  @Option(names = "--batch-size", defaultValue = "" + Relay.DEFAULT_BATCH_SIZE)
  int batchSize;

  @Option(names = "--partitions", defaultValue = "8")
  int partitions;

  @Override
  public Integer call() throws Exception {
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, 8); KafkaBroker kafka = KafkaBroker.start("1g")) {
      PostgresOutboxStore store = db.store().build();
      store.migrate();
      fill(db, store);
      kafka.createTopic("bench-reference", partitions);
      kafka.createTopic("bench-relay", partitions);

      double before = producerPerformance(kafka);
      double relay = drain(store, kafka);
      double after = producerPerformance(kafka);
      double reference = (before + after) / 2;

      Results results = new Results("relay-throughput", "java -jar txbox-bench/target/txbox-bench.jar relay");
      results.setting("events", events);
      results.setting("payloadBytes", 300);
      results.setting("headers", "traceparent");
      results.setting("batchSize", batchSize);
      results.setting("buckets", PostgresOutboxStore.DEFAULT_BUCKETS);
      results.setting("partitions", partitions);
      results.setting("reference", "ProducerPerformance, acks=all, 300 B, mean of one run before and one after");
      results.add("ProducerPerformance before", before, "msgs/s");
      results.add("ProducerPerformance after", after, "msgs/s");
      results.add("relay: drained, acked and checkpointed", relay, "msgs/s", "ProducerPerformance", reference);
      results.publish(Path.of("txbox-bench", "results"));
    }
    return 0;
  }

  /** Writes the backlog with SQL, in transactions of 100,000 rows, then vacuums it. */
  private void fill(BenchDatabase db, PostgresOutboxStore store) throws Exception {
    System.out.printf("writing a backlog of %,d events...%n", events);
    for (int done = 0; done < events; done += 100_000) {
      int n = Math.min(100_000, events - done);
      db.execute("INSERT INTO " + store.outboxTable()
          + " (id, key, type, destination, payload, content_type, headers, created_at)"
          + " SELECT gen_random_uuid(), 'customer-' || (g % 10000), 'OrderPlaced', 'bench-relay',"
          + " convert_to(repeat('x', 300), 'UTF8'), 'application/json',"
          + " jsonb_build_object('traceparent', '" + Events.TRACEPARENT + "'), now()"
          + " FROM generate_series(" + (done + 1) + ", " + (done + n) + ") AS g");
    }
    db.execute("VACUUM ANALYZE " + store.outboxTable());
  }

  private double drain(PostgresOutboxStore store, KafkaBroker kafka) throws InterruptedException {
    AtomicLong published = new AtomicLong();
    CountDownLatch done = new CountDownLatch(1);
    Metrics counting = new Metrics() {
      @Override
      public void published(String subscription, List<Message> acknowledged) {
        if (published.addAndGet(acknowledged.size()) >= events) {
          done.countDown();
        }
      }
    };
    System.out.printf("relaying %,d events...%n", events);
    long start = System.nanoTime();
    try (Relay relay = Relay.builder(store, KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .batchSize(batchSize).metrics(counting).build().start()) {
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException("the relay did not drain the backlog in 30 minutes");
      }
      return events / ((System.nanoTime() - start) / 1e9);
    }
  }

  private double producerPerformance(KafkaBroker kafka) throws Exception {
    Path log = Files.createTempFile("producer-performance", ".log");
    Process p = ChildProcess.start(List.of("-Xmx512m"), "org.apache.kafka.tools.ProducerPerformance",
        List.of("--topic", "bench-reference", "--num-records", Integer.toString(events), "--record-size", "300",
            "--throughput", "-1", "--producer-props", "bootstrap.servers=" + kafka.bootstrapServers(), "acks=all"),
        log);
    if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
      throw new IllegalStateException("ProducerPerformance failed: " + Files.readString(log));
    }
    Matcher last = null;
    for (String line : Files.readAllLines(log)) {
      Matcher m = RATE.matcher(line);
      if (m.find() && Long.parseLong(m.group(1)) == events) {
        last = m;
      }
    }
    if (last == null) {
      throw new IllegalStateException("no summary line in ProducerPerformance output: " + Files.readString(log));
    }
    System.out.printf("ProducerPerformance: %s records/s%n", last.group(2));
    return Double.parseDouble(last.group(2));
  }
}
