package io.txbox.bench;

import io.txbox.Inbox;
import io.txbox.InboxBatchHandler;
import io.txbox.InboxHandler;
import io.txbox.Message;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.kafka.KafkaSubscriber;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.spi.PublishResult;
import io.txbox.spi.support.SubscriberBuilder;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.sql.PreparedStatement;
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
 * Messages per second a {@link KafkaSubscriber} takes through the inbox, each message inserting an
 * order row: one transaction per message, batches of {@code --batch-size} with the same handler,
 * and batches with a batch handler that inserts the batch's rows in one JDBC batch; in interleaved
 * rounds over the same topic, each run a new consumer reading it from the start.
 */
@Command(name = "consumer", description = "Inbox consumer throughput from Kafka: one transaction per message"
    + " against batches, side by side.")
final class ConsumerThroughput implements Callable<Integer> {
  private static final String TOPIC = "bench-consumer";
  private static final String ONE_BY_ONE = "one transaction per message";
  private static final String BATCHES = "batches";
  private static final String BATCH_HANDLER = "batch handler";
  private static final List<String> VARIANTS = List.of(ONE_BY_ONE, BATCHES, BATCH_HANDLER);

  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--events", defaultValue = "30000", description = "Messages each run consumes. Default: ${DEFAULT-VALUE}.")
  int events;

  @Option(names = "--partitions", defaultValue = "6", description = "Partitions of the topic. Default: ${DEFAULT-VALUE}.")
  int partitions;

  @Option(names = "--concurrency", defaultValue = "1", description = "Kafka consumers (threads) of the subscriber."
      + " Default: ${DEFAULT-VALUE}.")
  int concurrency;

  @Option(names = "--batch-size", defaultValue = "" + SubscriberBuilder.DEFAULT_BATCH_SIZE,
      description = "The batched variants' batch size. Default: ${DEFAULT-VALUE}.")
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
      Map<String, List<Double>> rates = new LinkedHashMap<>();
      for (String variant : VARIANTS) {
        rates.put(variant, new ArrayList<>());
      }
      consume(kafka, inbox, BATCHES, "warm-up"); // JIT, pool and broker warm
      for (int round = 1; round <= rounds; round++) {
        for (String variant : VARIANTS) {
          double rate = consume(kafka, inbox, variant, "r" + round);
          rates.get(variant).add(rate);
          System.out.printf("round %d  %-28s %,8.0f messages/s%n", round, variant, rate);
        }
      }
      double one = WriteOverhead.median(rates.get(ONE_BY_ONE));
      results.add(ONE_BY_ONE, one, "messages/s");
      results.add(BATCHES + " of " + batchSize, WriteOverhead.median(rates.get(BATCHES)), "messages/s",
          ONE_BY_ONE, one);
      results.add(BATCH_HANDLER + ", batches of " + batchSize, WriteOverhead.median(rates.get(BATCH_HANDLER)),
          "messages/s", ONE_BY_ONE, one);
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
  private double consume(KafkaBench kafka, Inbox inbox, String variant, String run) throws Exception {
    String consumer = "bench-" + run + "-" + variant.replace(' ', '-');
    try (KafkaSubscriber subscriber = builder(inbox, consumer, variant)
        .bootstrapServers(kafka.bootstrapServers()).topics(TOPIC)
        .concurrency(concurrency).batchSize(variant.equals(ONE_BY_ONE) ? 1 : batchSize)
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

  /** The order row per message, inserted one by one, or by the batch handler in one JDBC batch. */
  private static KafkaSubscriber.Builder builder(Inbox inbox, String consumer, String variant) {
    AtomicLong orders = new AtomicLong();
    if (!variant.equals(BATCH_HANDLER)) {
      InboxHandler insertOrder = (tx, message, key) -> WriteOverhead.insertOrder(tx, orders.incrementAndGet());
      return KafkaSubscriber.builder(inbox, consumer, insertOrder);
    }
    InboxBatchHandler insertOrders = (tx, messages) -> {
      try (PreparedStatement insert = tx.prepareStatement(
          "INSERT INTO " + BenchDatabase.SCHEMA + ".orders (customer, amount) VALUES (?, ?)")) {
        for (int i = 0; i < messages.size(); i++) {
          long n = orders.incrementAndGet();
          insert.setString(1, "customer-" + (n % 10_000));
          insert.setBigDecimal(2, BigDecimal.valueOf(n % 100_000, 2));
          insert.addBatch();
        }
        insert.executeBatch();
      }
    };
    return KafkaSubscriber.builder(inbox, consumer, insertOrders);
  }

  private static void pauseUntil(long deadline) {
    if (System.nanoTime() > deadline) {
      throw new IllegalStateException("the subscriber did not take every message within 10 minutes");
    }
    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
  }
}
