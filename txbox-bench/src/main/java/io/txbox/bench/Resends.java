package io.txbox.bench;

import io.txbox.Relay;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.ChildProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Events a relay sends twice when buckets change hands, counted at the broker (the records in the
 * topic less the events written): two relays sharing a drain, the second joining (the first gives
 * it half its buckets) and stopping cleanly (the first takes them back) (goal 0), and a relay killed with SIGKILL mid-drain whose buckets another takes over
 * (goal: at most the batch in flight).
 */
@Command(name = "resends", description = "Events sent twice when relays hand buckets over: clean stop and SIGKILL.")
final class Resends implements Callable<Integer> {
  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--events", defaultValue = "1000000")
  int events;

  @Option(names = "--batch-size", defaultValue = "" + Relay.DEFAULT_BATCH_SIZE)
  int batchSize;

  @Override
  public Integer call() throws Exception {
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, 8); KafkaBench kafka = new KafkaBench(8)) {
      long clean = cleanHandover(db, kafka);
      long killed = killedRelay(db, kafka);
      Results results = new Results("resends", "java -jar txbox-bench/target/txbox-bench.jar resends");
      results.setting("events", events);
      results.setting("batchSize", batchSize);
      results.setting("buckets", PostgresOutboxStore.DEFAULT_BUCKETS);
      results.add("re-sent: relay b joins at 1/10 (a gives it half the buckets), b stops cleanly at 2/3 (a takes them back), a stops at the end",
          clean, "events");
      results.add("re-sent: a relay killed (SIGKILL) at 1/3, another takes its buckets over", killed, "events");
      results.publish(Path.of("txbox-bench", "results"));
    }
    return 0;
  }

  /**
   * Relay a drains; b joins at a tenth and a gives it half the buckets; b stops cleanly at two
   * thirds and a takes those buckets back, which b moved on meanwhile; a finishes and stops.
   */
  private long cleanHandover(BenchDatabase db, KafkaBench kafka) throws Exception {
    String topic = "resends-clean";
    PostgresOutboxStore store = prepare(db, kafka, "clean_", topic);
    System.out.printf("clean handover: relaying %,d events with two relays...%n", events);
    try (Relay a = relay(store, kafka, "a").start()) {
      kafka.awaitRecords(topic, events / 10);
      try (Relay b = relay(store, kafka, "b").start()) {
        kafka.awaitRecords(topic, events * 2 / 3);
      }
      awaitDrained(store);
    }
    return kafka.records(topic) - events;
  }

  /** A relay in a child JVM drains; SIGKILL at a third; a relay here takes its buckets over. */
  private long killedRelay(BenchDatabase db, KafkaBench kafka) throws Exception {
    String topic = "resends-kill";
    PostgresOutboxStore store = prepare(db, kafka, "kill_", topic);
    System.out.printf("SIGKILL: relaying %,d events, killing the relay at a third...%n", events);
    Path log = Files.createTempFile("txbox-resends-relay", ".log");
    Process child = ChildProcess.start(List.of("-Xmx512m"), KilledRelay.class.getName(),
        List.of(jdbcUrl, BenchDatabase.SCHEMA, "kill_", kafka.bootstrapServers(), Integer.toString(batchSize)), log);
    try {
      kafka.awaitRecords(topic, events / 3);
    } finally {
      child.destroyForcibly(); // SIGKILL: no drain, no checkpoint, no hand-back
      child.waitFor(30, TimeUnit.SECONDS);
    }
    try (Relay successor = relay(store, kafka, "successor").start()) {
      awaitDrained(store); // it claims each bucket once the dead relay's lease has run out
    }
    return kafka.records(topic) - events;
  }

  private PostgresOutboxStore prepare(BenchDatabase db, KafkaBench kafka, String prefix, String topic)
      throws Exception {
    kafka.createTopic(topic, 8);
    PostgresOutboxStore store = db.store().tablePrefix(prefix).build();
    store.migrate();
    for (int done = 0; done < events; done += 100_000) {
      int n = Math.min(100_000, events - done);
      db.execute("INSERT INTO " + store.operator().outboxTable()
          + " (id, key, type, destination, payload, content_type, headers, created_at)"
          + " SELECT gen_random_uuid(), 'customer-' || (g % 10000), 'OrderPlaced', '" + topic + "',"
          + " convert_to(repeat('x', 300), 'UTF8'), 'application/json', '{}'::jsonb, now()"
          + " FROM generate_series(" + (done + 1) + ", " + (done + n) + ") AS g");
    }
    db.execute("VACUUM ANALYZE " + store.operator().outboxTable());
    return store;
  }

  private Relay relay(PostgresOutboxStore store, KafkaBench kafka, String instance) {
    return Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .instanceId(instance).batchSize(batchSize).build();
  }

  private static void awaitDrained(PostgresOutboxStore store) throws Exception {
    Await.until(() -> store.relay().backlog(Relay.DEFAULT_SUBSCRIPTION, 1).map(b -> b.pending() == 0).orElse(false),
        "the backlog was not drained");
  }
}
