package io.txbox.bench;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.testkit.KafkaBroker;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * How soon relays settle under a steady write rate: relay a starts with the writers, then relay b
 * joins and leaves again, several times, each change at a random moment of the heartbeat's cycle.
 * For each change: when the relay that takes buckets first publishes, when each relay holds its
 * fair share, and the commit-to-ack latency of the events committed in the 3 s after the change
 * next to the steady latency of the last 3 s before the next one.
 */
@Command(name = "settle", description = "Time to full rate after a relay starts, and after a second one joins or leaves, under steady writes.")
final class Settle implements Callable<Integer> {
  private static final int BUCKETS = PostgresOutboxStore.DEFAULT_BUCKETS;
  private static final long AFTER_CHANGE_NANOS = 3_000_000_000L;
  private static final long STEADY_NANOS = 3_000_000_000L;

  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--rate", defaultValue = "1000", description = "Events per second, one per transaction.")
  int rate;

  @Option(names = "--phase-seconds", defaultValue = "6", description = "Time between changes; at least 4.")
  int phaseSeconds;

  @Option(names = "--cycles", defaultValue = "5", description = "How often b joins and leaves.")
  int cycles;

  private final Map<UUID, Long> committed = new ConcurrentHashMap<>();
  private final Map<UUID, Long> acked = new ConcurrentHashMap<>();
  private final Map<String, AtomicLong> firstAck = new ConcurrentHashMap<>();
  private final Map<String, List<Double>> figures = new LinkedHashMap<>();
  private final Random random = new Random(42);

  @Override
  public Integer call() throws Exception {
    if (phaseSeconds < 4) {
      throw new IllegalArgumentException("--phase-seconds must be at least 4 (3 s after a change are measured), was "
          + phaseSeconds);
    }
    Results results = new Results("settle", "java -jar txbox-bench/target/txbox-bench.jar settle");
    results.setting("rate", rate);
    results.setting("phaseSeconds", phaseSeconds);
    results.setting("cycles", cycles);
    results.setting("buckets", BUCKETS);
    results.setting("relays", "in one JVM, default heartbeat (" + Relay.DEFAULT_HEARTBEAT_INTERVAL.toMillis()
        + " ms) and lease, each with a Kafka publisher of its own; each change at a random moment");
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, 12); KafkaBroker kafka = KafkaBroker.start("1g")) {
      kafka.createTopic("settle", 8);
      PostgresOutboxStore store = db.store().build();
      store.migrate();
      run(db, store, kafka, "warm-up-" + UUID.randomUUID().toString().substring(0, 8), 1);
      db.execute("TRUNCATE " + store.operator().outboxTable());
      committed.clear();
      acked.clear();
      figures.clear();
      run(db, store, kafka, "settle-" + UUID.randomUUID().toString().substring(0, 8), cycles);
    }
    figures.forEach((name, values) -> {
      results.add(name + ", mean", values.stream().mapToDouble(d -> d).average().orElse(Double.NaN), "ms");
      results.add(name + ", max", values.stream().mapToDouble(d -> d).max().orElse(Double.NaN), "ms");
    });
    results.publish(Path.of("txbox-bench", "results"));
    return 0;
  }

  /** a starts with the writers; then b joins and leaves {@code cycles} times. */
  private void run(BenchDatabase db, PostgresOutboxStore store, KafkaBroker kafka, String subscription, int cycles)
      throws Exception {
    AtomicBoolean writing = new AtomicBoolean(true);
    Outbox outbox = Outbox.create(store.writer());
    Thread writer = new Thread(() -> write(db, outbox, writing), "settle-writer");
    long start = System.nanoTime();
    writer.start();
    Relay a = relay(store, kafka, subscription, "a").start();
    long aHasAll = firstTimes(start, () -> a.ownedBuckets().size() == BUCKETS)[0];
    long next = start + phaseNanos();
    sleepUntil(next);
    recordNanos("start: a's first event acked after", firstAck.get("a").get() - start);
    recordNanos("start: a holds every bucket after", aHasAll - start);
    latencies("start", start, next);
    for (int cycle = 0; cycle < cycles; cycle++) {
      long joined = randomMomentAfter(next);
      Relay b = relay(store, kafka, subscription, "b").start();
      long[] halves = firstTimes(joined, () -> b.ownedBuckets().size() == BUCKETS / 2,
          () -> a.ownedBuckets().size() == BUCKETS / 2);
      next = joined + phaseNanos();
      sleepUntil(next);
      recordNanos("join: b's first event acked after", firstAck.get("b").get() - joined);
      recordNanos("join: b holds its half after", halves[0] - joined);
      recordNanos("join: a gave the other half back after", halves[1] - joined);
      latencies("join", joined, next);

      long left = randomMomentAfter(next);
      b.close();
      long aHasAllAgain = firstTimes(left, () -> a.ownedBuckets().size() == BUCKETS)[0];
      next = left + phaseNanos();
      sleepUntil(next);
      recordNanos("leave: a holds every bucket again after", aHasAllAgain - left);
      latencies("leave", left, next);
    }
    writing.set(false);
    writer.join();
    Thread.sleep(2000); // the last events arrive
    a.close();
    if (cycles > 1) {
      timeline(start, next);
    }
  }

  /** Waits until {@code after} and a random part of a heartbeat interval more, so that no change falls on a beat by design. */
  private long randomMomentAfter(long after) {
    sleepUntil(after + (long) (random.nextDouble() * Relay.DEFAULT_HEARTBEAT_INTERVAL.toNanos()));
    return System.nanoTime();
  }

  private void recordNanos(String figure, long nanos) {
    record(figure, nanos / 1e6);
  }

  private void record(String figure, double millis) {
    figures.computeIfAbsent(figure, f -> new ArrayList<>()).add(millis);
  }

  /** The latency of the events committed in the 3 s after the change at {@code at}, and the steady one before {@code until}. */
  private void latencies(String change, long at, long until) {
    long[] after = latencies(at, at + AFTER_CHANGE_NANOS);
    long[] steady = latencies(until - STEADY_NANOS, until);
    record(change + ": p99 latency, events of the 3 s after", percentile(after, 99));
    record(change + ": max latency, events of the 3 s after", max(after));
    record(change + ": p99 latency, steady (last 3 s before the next change)", percentile(steady, 99));
  }

  /** Per 500 ms of commits: events, p50 and max latency, to see a stall where it is. */
  private void timeline(long start, long end) {
    System.out.printf("%n%8s %8s %10s %10s%n", "s", "events", "p50 ms", "max ms");
    for (long from = start; from < end; from += 500_000_000L) {
      long[] window = latencies(from, from + 500_000_000L);
      System.out.printf("%8.1f %8d %10.1f %10.1f%n", (from - start) / 1e9, window.length, percentile(window, 50),
          max(window));
    }
  }

  /** Commit-to-ack latencies in ms of the events committed in [from, to), sorted; unacked ones count as acked at the end. */
  private long[] latencies(long from, long to) {
    List<Long> micros = new ArrayList<>();
    long never = System.nanoTime();
    committed.forEach((id, at) -> {
      if (at >= from && at < to) {
        micros.add((acked.getOrDefault(id, never) - at) / 1000);
      }
    });
    return WriteOverhead.sorted(micros);
  }

  private static double percentile(long[] sortedMicros, double p) {
    return sortedMicros.length == 0 ? Double.NaN : WriteOverhead.percentile(sortedMicros, p) / 1000.0;
  }

  private static double max(long[] sortedMicros) {
    return sortedMicros.length == 0 ? Double.NaN : sortedMicros[sortedMicros.length - 1] / 1000.0;
  }

  private Relay relay(PostgresOutboxStore store, KafkaBroker kafka, String subscription, String instance) {
    AtomicLong first = new AtomicLong();
    firstAck.put(instance, first);
    Metrics stamp = new Metrics() {
      @Override
      public void published(String s, List<Message> acknowledged) {
        long now = System.nanoTime();
        first.compareAndSet(0, now);
        acknowledged.forEach(m -> acked.putIfAbsent(m.id(), now));
      }
    };
    return Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .subscription(subscription).instanceId(instance).metrics(stamp).build();
  }

  /** One writer committing one event per transaction at the rate. */
  private void write(BenchDatabase db, Outbox outbox, AtomicBoolean writing) {
    long interval = 1_000_000_000L / rate;
    try (Connection c = db.dataSource.getConnection()) {
      c.setAutoCommit(false);
      for (long next = System.nanoTime(); writing.get(); next += interval) {
        LockSupport.parkNanos(next - System.nanoTime());
        Message m = Events.orderPlaced("settle", next);
        outbox.send(c, m);
        c.commit();
        committed.put(m.id(), System.nanoTime());
      }
    } catch (Exception e) {
      throw new IllegalStateException("the writer failed", e);
    }
  }

  /** When each condition first held, polled every 5 ms for at most a phase from {@code since}. */
  private long[] firstTimes(long since, BooleanSupplier... conditions) throws InterruptedException {
    long[] times = new long[conditions.length];
    int open = conditions.length;
    while (open > 0) {
      long now = System.nanoTime();
      if (now - since > phaseNanos()) {
        throw new IllegalStateException("the relays did not settle on their fair shares within " + phaseSeconds + " s");
      }
      for (int i = 0; i < conditions.length; i++) {
        if (times[i] == 0 && conditions[i].getAsBoolean()) {
          times[i] = now;
          open--;
        }
      }
      Thread.sleep(5);
    }
    return times;
  }

  private long phaseNanos() {
    return phaseSeconds * 1_000_000_000L;
  }

  private static void sleepUntil(long nanoTime) {
    LockSupport.parkNanos(nanoTime - System.nanoTime());
  }
}
