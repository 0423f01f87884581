package io.txbox.bench;

import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.Message;
import io.txbox.jdbc.PostgresInboxStore;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.kafka.KafkaSubscriber;
import io.txbox.spi.PublishResult;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Messages per second a {@link KafkaSubscriber} takes through the inbox, each with a handler that
 * inserts an order row: one transaction per message against batches of {@code --batch-size}, in
 * interleaved rounds over the same topic, each run a new consumer reading it from the start.
 */
@Command(name = "consumer", description = "Inbox consumer throughput from Kafka: one transaction per message"
    + " against batches, side by side.")
final class ConsumerThroughput implements Callable<Integer> {
  private static final String TOPIC = "bench-consumer";

  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--events", defaultValue = "30000", description = "Messages each run consumes. Default: ${DEFAULT-VALUE}.")
  int events;

  @Option(names = "--partitions", defaultValue = "6", description = "Partitions of the topic. Default: ${DEFAULT-VALUE}.")
  int partitions;

  @Option(names = "--concurrency", defaultValue = "1", description = "Kafka consumers (threads) of the subscriber."
      + " Default: ${DEFAULT-VALUE}.")
  int concurrency;

  @Option(names = "--batch-size", defaultValue = "100", description = "The batched variant's batch size."
      + " Default: ${DEFAULT-VALUE}.")
  int batchSize;

  @Option(names = "--max-poll-records", defaultValue = "" + KafkaSubscriber.DEFAULT_MAX_POLL_RECORDS,
      description = "Kafka's max.poll.records: a batch holds one poll's records of one partition at most."
          + " Default: ${DEFAULT-VALUE}.")
  int maxPollRecords;

  @Option(names = "--rounds", defaultValue = "3", description = "Rounds of both variants. Default: ${DEFAULT-VALUE}.")
  int rounds;

  @Override
  public Integer call() throws Exception {
    Results results = new Results("consumer", "java -jar txbox-bench/target/txbox-bench.jar consumer");
    results.setting("events", events);
    results.setting("partitions", partitions);
    results.setting("concurrency", concurrency);
    results.setting("maxPollRecords", maxPollRecords);
    results.setting("statistic", "median of rounds");
    results.setting("handler", "one INSERT of an order row, in the inbox's transaction");
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, concurrency + 4);
        KafkaBench kafka = new KafkaBench(partitions)) {
      db.store().build().migrate();
      kafka.createTopic(TOPIC, partitions);
      fill(kafka);
      Inbox inbox = Inbox.create(db.dataSource, PostgresInboxStore.builder().schema(BenchDatabase.SCHEMA).build());
      Map<Integer, List<Double>> rates = new LinkedHashMap<>();
      rates.put(1, new ArrayList<>());
      rates.put(batchSize, new ArrayList<>());
      consume(kafka, inbox, batchSize, "warm-up"); // JIT, pool and broker warm
      for (int round = 1; round <= rounds; round++) {
        for (int size : rates.keySet()) {
          double rate = consume(kafka, inbox, size, "r" + round);
          rates.get(size).add(rate);
          System.out.printf("round %d  batch size %4d  %,8.0f messages/s%n", round, size, rate);
        }
      }
      double one = WriteOverhead.median(rates.get(1));
      results.add("one transaction per message", one, "messages/s");
      results.add("batches of " + batchSize, WriteOverhead.median(rates.get(batchSize)), "messages/s",
          "one transaction per message", one);
      results.publish(Path.of("txbox-bench", "results"));
    }
    return 0;
  }

  private void fill(KafkaBench kafka) throws Exception {
    System.out.printf("publishing %,d messages to %s...%n", events, TOPIC);
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build()) {
      for (int from = 0; from < events; from += 1_000) {
        List<Message> batch = new ArrayList<>();
        for (int n = from; n < Math.min(events, from + 1_000); n++) {
          batch.add(Events.orderPlaced(TOPIC, n));
        }
        PublishResult result = publisher.publish(batch);
        if (!result.failures().isEmpty()) {
          throw new IllegalStateException("Kafka refused the benchmark's messages: " + result.failures());
        }
      }
    }
  }

  /** Messages per second from the first message taken to the last: the group's join is not counted. */
  private double consume(KafkaBench kafka, Inbox inbox, int size, String run) throws Exception {
    AtomicLong orders = new AtomicLong();
    InboxHandler insertOrder = (tx, message, key) -> WriteOverhead.insertOrder(tx, orders.incrementAndGet());
    try (KafkaSubscriber subscriber = KafkaSubscriber.builder(inbox, "bench-" + run + "-" + size, insertOrder)
        .bootstrapServers(kafka.bootstrapServers()).topics(TOPIC)
        .concurrency(concurrency).batchSize(size)
        .property("max.poll.records", Integer.toString(maxPollRecords))
        .build().start()) {
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
      while (subscriber.processed() == 0) {
        pauseUntil(deadline);
      }
      long first = subscriber.processed();
      long start = System.nanoTime();
      while (subscriber.processed() < events) {
        pauseUntil(deadline);
      }
      return (events - first) / ((System.nanoTime() - start) / 1e9);
    }
  }

  private static void pauseUntil(long deadline) {
    if (System.nanoTime() > deadline) {
      throw new IllegalStateException("the subscriber did not take every message within 10 minutes");
    }
    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
  }
}
