package io.txbox.bench;

import io.txbox.Delivery;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.kafka.KafkaExactlyOncePublisher;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.spi.Publisher;
import io.txbox.testkit.KafkaBroker;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Commit to visible, exactly-once against at-least-once, at an offered 1,000 events/s: writers
 * commit one event a transaction and stamp each commit ({@link CommitToAck}). At-least-once ends
 * at the relay's ack from the broker; exactly-once at the moment a {@code read_committed} consumer
 * polls the event, which is when a consumer could first act on it. Rounds alternate which goes
 * first.
 */
@Command(name = "exactly-once-latency",
    description = "Commit to visible for a read_committed consumer (exactly-once) against commit to ack (at-least-once), at 1,000 events/s.")
final class ExactlyOnceLatency implements Callable<Integer> {
  private static final int WRITERS = 4;
  private static final String TOPIC = "latency"; // where CommitToAck writes

  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--seconds", defaultValue = "20", description = "Length of each measurement.")
  int seconds;

  @Option(names = "--rounds", defaultValue = "3")
  int rounds;

  @Option(names = "--rate", defaultValue = "1000", description = "Events a second, one a transaction.")
  int rate;

  @Override
  public Integer call() throws Exception {
    Results results = new Results("exactly-once-latency",
        "java -jar txbox-bench/target/txbox-bench.jar exactly-once-latency --rounds " + rounds);
    results.setting("writers", WRITERS);
    results.setting("eventsPerSecond", rate + ", one a transaction");
    results.setting("secondsPerMeasurement", seconds);
    results.setting("rounds", rounds + ", alternating which delivery goes first");
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, 12); KafkaBroker kafka = KafkaBroker.start("1g")) {
      kafka.createTopic(TOPIC, 8);
      db.store().build().migrate();
      measure(db, kafka, true, -1, new Results("warm-up", "")); // a fresh broker and JVM are slow at first
      measure(db, kafka, false, -1, new Results("warm-up", ""));
      for (int round = 0; round < rounds; round++) {
        boolean eosFirst = round % 2 == 1;
        measure(db, kafka, eosFirst, round, results);
        measure(db, kafka, !eosFirst, round, results);
      }
    }
    results.publish(Path.of("txbox-bench", "results"));
    return 0;
  }

  private void measure(BenchDatabase db, KafkaBroker kafka, boolean eos, int round, Results results)
      throws Exception {
    PostgresOutboxStore store = db.store().build();
    db.execute("TRUNCATE " + store.operator().outboxTable()); // each phase starts from an empty log
    CommitToAck run = new CommitToAck(WRITERS);
    AtomicBoolean reading = new AtomicBoolean(true);
    Thread consumer = eos ? startConsumer(kafka, run, reading) : null;
    String subscription = (eos ? "eos-" : "alo-") + UUID.randomUUID().toString().substring(0, 8);
    try (Relay relay = Relay.builder(store.relay(), publisher(kafka, eos, subscription)).subscription(subscription)
        .delivery(eos ? Delivery.EXACTLY_ONCE : Delivery.AT_LEAST_ONCE)
        .metrics(eos ? new Metrics() {} : run.stamp()).build().start()) {
      run.write(db.dataSource, Outbox.create(store.writer()), rate, 1, seconds);
      Await.until(run::allArrived, "not every committed event arrived");
    } finally {
      reading.set(false);
      if (consumer != null) {
        consumer.join();
      }
    }
    long[] sorted = run.sortedMicros();
    String label = "round " + round + ", " + (eos ? "exactly-once, commit to visible" : "at-least-once, commit to ack");
    System.out.printf("%s: %,d of %,d events; p50 %.1f ms, p99 %.1f ms%n", label, sorted.length, run.committedCount(),
        WriteOverhead.percentile(sorted, 50) / 1000.0, WriteOverhead.percentile(sorted, 99) / 1000.0);
    results.add(label + ": p50", WriteOverhead.percentile(sorted, 50) / 1000.0, "ms");
    results.add(label + ": p99", WriteOverhead.percentile(sorted, 99) / 1000.0, "ms");
  }

  private static Publisher publisher(KafkaBroker kafka, boolean eos, String subscription) {
    return eos
        ? KafkaExactlyOncePublisher.builder().bootstrapServers(kafka.bootstrapServers())
            .transactionalIdPrefix("bench-" + subscription + "-").build()
        : KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build();
  }

  /** A read_committed consumer from the topic's end, stamping each event's arrival until told to stop. */
  private static Thread startConsumer(KafkaBroker kafka, CommitToAck run, AtomicBoolean reading) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
        new ByteArrayDeserializer());
    List<TopicPartition> partitions = consumer.partitionsFor(TOPIC, Duration.ofSeconds(30)).stream()
        .map(i -> new TopicPartition(TOPIC, i.partition())).toList();
    consumer.assign(partitions);
    consumer.seekToEnd(partitions);
    partitions.forEach(consumer::position); // fixes the start before the first commit
    Thread t = new Thread(() -> {
      try (consumer) {
        while (reading.get()) {
          for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
            long now = System.nanoTime();
            Header id = r.headers().lastHeader("txbox-id");
            if (id != null) {
              run.seen(UUID.fromString(new String(id.value(), StandardCharsets.UTF_8)), now);
            }
          }
        }
      }
    }, "eos-latency-consumer");
    t.start();
    return t;
  }
}
