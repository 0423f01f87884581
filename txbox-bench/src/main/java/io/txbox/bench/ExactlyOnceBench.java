package io.txbox.bench;

import com.sun.management.OperatingSystemMXBean;
import io.txbox.Delivery;
import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.kafka.KafkaExactlyOncePublisher;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.spi.Publisher;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Exactly-once delivery against at-least-once, side by side on one backlog, one PostgreSQL and one
 * Kafka: each round drains the whole backlog once per delivery (a fresh subscription each time,
 * alternating which goes first), and the relay's CPU per event is this process's CPU time over the
 * drain (the broker and the database run in processes of their own).
 */
@Command(name = "exactly-once", description = "Exactly-once against at-least-once: drain rate and relay CPU per event.")
final class ExactlyOnceBench implements Callable<Integer> {
  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--events", defaultValue = "200000")
  int events;

  @Option(names = "--rounds", defaultValue = "3")
  int rounds;

  @Option(names = "--partitions", defaultValue = "8")
  int partitions;

  /** One drain: its rate and the relay's CPU per event. */
  private record Drain(double rate, double cpuMicrosPerEvent) {}

  @Override
  public Integer call() throws Exception {
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, 8); KafkaBench kafka = new KafkaBench(partitions)) {
      PostgresOutboxStore store = db.store().build();
      store.migrate();
      fill(db, store);
      List<Drain> atLeastOnce = new ArrayList<>();
      List<Drain> exactlyOnce = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        boolean eosFirst = round % 2 == 1;
        for (int turn = 0; turn < 2; turn++) {
          boolean eos = (turn == 0) == eosFirst;
          String subscription = (eos ? "eos-" : "alo-") + round;
          Drain d = drain(store, publisher(kafka, eos, round), subscription, eos);
          (eos ? exactlyOnce : atLeastOnce).add(d);
          System.out.printf("round %d, %s: %,.0f msgs/s, %.1f µs CPU per event%n", round,
              eos ? "exactly-once" : "at-least-once", d.rate(), d.cpuMicrosPerEvent());
        }
      }
      Results results = new Results("exactly-once",
          "java -jar txbox-bench/target/txbox-bench.jar exactly-once --events " + events + " --rounds " + rounds);
      results.setting("events", events);
      results.setting("payloadBytes", 300);
      results.setting("partitions", partitions);
      results.setting("buckets", PostgresOutboxStore.DEFAULT_BUCKETS);
      results.setting("rounds", rounds + ", alternating which delivery drains first");
      for (int i = 0; i < rounds; i++) {
        results.add("round " + i + ": exactly-once drain", exactlyOnce.get(i).rate(), "msgs/s",
            "at-least-once drain", atLeastOnce.get(i).rate());
        results.add("round " + i + ": exactly-once relay CPU per event", exactlyOnce.get(i).cpuMicrosPerEvent(), "µs",
            "at-least-once", atLeastOnce.get(i).cpuMicrosPerEvent());
      }
      results.publish(Path.of("txbox-bench", "results"));
    }
    return 0;
  }

  private Publisher publisher(KafkaBench kafka, boolean eos, int round) {
    if (!eos) {
      return KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build();
    }
    return KafkaExactlyOncePublisher.builder().bootstrapServers(kafka.bootstrapServers())
        .transactionalIdPrefix("bench-" + round + "-").build();
  }

  /** Writes the backlog with SQL, in transactions of 100,000 rows, then vacuums it. */
  private void fill(BenchDatabase db, PostgresOutboxStore store) throws Exception {
    System.out.printf("writing a backlog of %,d events...%n", events);
    for (int done = 0; done < events; done += 100_000) {
      int n = Math.min(100_000, events - done);
      db.execute("INSERT INTO " + store.operator().outboxTable()
          + " (id, key, type, destination, payload, content_type, headers, created_at)"
          + " SELECT gen_random_uuid(), 'customer-' || (g % 10000), 'OrderPlaced', '" + BenchBroker.RELAY_DESTINATION
          + "', convert_to(repeat('x', 300), 'UTF8'), 'application/json',"
          + " jsonb_build_object('traceparent', '" + Events.TRACEPARENT + "'), now()"
          + " FROM generate_series(" + (done + 1) + ", " + (done + n) + ") AS g");
    }
    db.execute("VACUUM ANALYZE " + store.operator().outboxTable());
  }

  private Drain drain(PostgresOutboxStore store, Publisher publisher, String subscription, boolean eos)
      throws InterruptedException {
    AtomicLong published = new AtomicLong();
    CountDownLatch done = new CountDownLatch(1);
    Metrics counting = new Metrics() {
      @Override
      public void published(String s, List<Message> acknowledged) {
        if (published.addAndGet(acknowledged.size()) >= events) {
          done.countDown();
        }
      }
    };
    OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    long cpuStart = os.getProcessCpuTime();
    long start = System.nanoTime();
    try (Relay relay = Relay.builder(store.relay(), publisher).subscription(subscription)
        .delivery(eos ? Delivery.EXACTLY_ONCE : Delivery.AT_LEAST_ONCE).metrics(counting).build().start()) {
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException("the relay did not drain the backlog in 30 minutes");
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      double cpuMicros = (os.getProcessCpuTime() - cpuStart) / 1e3;
      return new Drain(events / seconds, cpuMicros / events);
    }
  }
}
