package io.txbox.bench;

import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.spi.Publisher;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Drains a backlog of events of ~300 bytes into a broker, acknowledged and checkpointed, next to
 * that broker's own client publishing the same number of messages of the same size, acknowledged,
 * to the same broker, run before and after: Kafka's ProducerPerformance, jnats to JetStream,
 * amqp-client with publisher confirms, or the AWS SDK's SendMessageBatch to ElasticMQ.
 */
@Command(name = "relay", description = "Relay throughput: drain a backlog into a broker, next to its own client.")
final class RelayThroughput implements Callable<Integer> {
  /** The brokers the benchmark can start. */
  enum Broker { kafka, nats, rabbitmq, sqs }

  @Option(names = "--broker", defaultValue = "kafka", description = "${COMPLETION-CANDIDATES}; default ${DEFAULT-VALUE}")
  Broker broker;

  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--events", defaultValue = "1000000")
  int events;

  @Option(names = "--batch-size", defaultValue = "" + Relay.DEFAULT_BATCH_SIZE)
  int batchSize;

  @Option(names = "--partitions", defaultValue = "8", description = "Kafka only")
  int partitions;

  @Override
  public Integer call() throws Exception {
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, 8); BenchBroker target = start()) {
      PostgresOutboxStore store = db.store().build();
      store.migrate();
      fill(db, store, target.relayDestination());

      double before = bare(target);
      double relay = drain(store, target.publisher());
      double after = bare(target);
      double reference = (before + after) / 2;
      double withHeaders = target.bareRateWithRelayHeaders(events);
      double former = drainInFormerWireFormat(db, store, target);

      String name = broker == Broker.kafka ? "relay-throughput" : "relay-throughput-" + broker;
      Results results = new Results(name, "java -jar txbox-bench/target/txbox-bench.jar relay --broker " + broker);
      results.setting("events", events);
      results.setting("payloadBytes", 300);
      results.setting("headers", "traceparent");
      results.setting("batchSize", batchSize);
      results.setting("buckets", PostgresOutboxStore.DEFAULT_BUCKETS);
      if (broker == Broker.kafka) {
        results.setting("partitions", partitions);
      }
      results.setting("reference", target.reference() + ", mean of one run before and one after");
      results.add("own client before", before, "msgs/s");
      results.add("own client after", after, "msgs/s");
      results.add("relay: drained, acked and checkpointed", relay, "msgs/s", "own client", reference);
      if (!Double.isNaN(withHeaders)) {
        results.add("own client, messages with the relay's headers (after)", withHeaders, "msgs/s");
        results.add("relay, against its own client sending the same headers", relay, "msgs/s",
            "own client, same headers", withHeaders);
      }
      if (!Double.isNaN(former)) {
        results.add("relay in the former wire format, drained after", former, "msgs/s", "own client", reference);
        results.add("relay, current wire format against the former", relay, "msgs/s", "former wire format", former);
      }
      results.publish(Path.of("txbox-bench", "results"));
    }
    return 0;
  }

  private BenchBroker start() throws Exception {
    System.out.printf("starting a %s broker of the benchmark's own...%n", broker);
    return switch (broker) {
      case kafka -> new KafkaBench(partitions);
      case nats -> new NatsBench();
      case rabbitmq -> new RabbitBench();
      case sqs -> new SqsBench();
    };
  }

  private double bare(BenchBroker target) throws Exception {
    double rate = target.bareRate(events);
    System.out.printf("%s: %,.0f msgs/s%n", target.reference(), rate);
    return rate;
  }

  /** Writes the backlog with SQL, in transactions of 100,000 rows, then vacuums it. */
  private void fill(BenchDatabase db, PostgresOutboxStore store, String destination) throws Exception {
    System.out.printf("writing a backlog of %,d events...%n", events);
    for (int done = 0; done < events; done += 100_000) {
      int n = Math.min(100_000, events - done);
      db.execute("INSERT INTO " + store.operator().outboxTable()
          + " (id, key, type, destination, payload, content_type, headers, created_at)"
          + " SELECT gen_random_uuid(), 'customer-' || (g % 10000), 'OrderPlaced', '" + destination + "',"
          + " convert_to(repeat('x', 300), 'UTF8'), 'application/json',"
          + " jsonb_build_object('traceparent', '" + Events.TRACEPARENT + "'), now()"
          + " FROM generate_series(" + (done + 1) + ", " + (done + n) + ") AS g");
    }
    db.execute("VACUUM ANALYZE " + store.operator().outboxTable());
  }

  /** The same backlog written again and drained by the broker's former wire format; NaN where it has none. */
  private double drainInFormerWireFormat(BenchDatabase db, PostgresOutboxStore store, BenchBroker target)
      throws Exception {
    Publisher former = target.publisherInFormerWireFormat();
    if (former == null) {
      return Double.NaN;
    }
    db.execute("TRUNCATE " + store.operator().outboxTable()); // a fresh table, as the first drain had
    fill(db, store, target.relayDestination());
    System.out.println("again, in the former wire format:");
    return drain(store, former);
  }

  private double drain(PostgresOutboxStore store, Publisher publisher) throws InterruptedException {
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
    try (Relay relay = Relay.builder(store.relay(), publisher).batchSize(batchSize).metrics(counting).build().start()) {
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException("the relay did not drain the backlog in 30 minutes");
      }
      return events / ((System.nanoTime() - start) / 1e9);
    }
  }
}
