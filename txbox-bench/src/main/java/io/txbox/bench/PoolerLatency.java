package io.txbox.bench;

import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.PgBouncer;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.Callable;
import org.postgresql.ds.PGSimpleDataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Commit-to-broker-ack latency at 1,000 events/s with writers and relay behind a PgBouncer in
 * transaction mode (Debian's pgbouncer, started here in front of the server), side by side with
 * the same on a direct connection, in alternating rounds: the relay woken through a direct
 * {@code LISTEN} connection of its own, and the relay left to poll (its {@code LISTEN} through the
 * pooler hears nothing).
 */
@Command(name = "pooler", description = "Commit-to-ack latency at 1,000 events/s behind PgBouncer in transaction mode, beside a direct connection.")
final class PoolerLatency implements Callable<Integer> {
  private static final int WRITERS = 4;

  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
      description = "The server, reached directly; the pooler is started in front of it.")
  String jdbcUrl;

  @Option(names = "--seconds", defaultValue = "20", description = "Length of each measurement.")
  int seconds;

  @Option(names = "--rounds", defaultValue = "2", description = "Rounds of the three set-ups, alternating.")
  int rounds;

  @Override
  public Integer call() throws Exception {
    Results results = new Results("pooler", "java -jar txbox-bench/target/txbox-bench.jar pooler");
    results.setting("writers", WRITERS);
    results.setting("rate", "1,000 transactions/s of one event");
    results.setting("secondsPerMeasurement", seconds);
    results.setting("pooler", "PgBouncer, pool_mode = transaction, default_pool_size = 20");
    java.net.URI server = java.net.URI.create(jdbcUrl.substring("jdbc:".length()));
    String database = server.getPath().substring(1);
    try (KafkaBroker kafka = KafkaBroker.start("1g");
        PgBouncer pooler = PgBouncer.start(PgBouncer.Mode.TRANSACTION, server.getHost(),
            server.getPort() < 0 ? 5432 : server.getPort(), 20);
        BenchDatabase direct = new BenchDatabase(jdbcUrl, 12);
        BenchDatabase pooled = new BenchDatabase(pooler.jdbcUrl(database) + "&prepareThreshold=0", 12)) {
      kafka.createTopic("latency", 8);
      direct.store().build().migrate();
      PGSimpleDataSource listen = new PGSimpleDataSource();
      listen.setURL(jdbcUrl);
      measure(direct, direct.store().build(), kafka, new Results("warm-up", ""), "warm-up");
      for (int round = 1; round <= rounds; round++) {
        measure(direct, direct.store().build(), kafka, results, "round " + round + ", direct");
        measure(pooled, pooled.store().listenDataSource(listen).build(), kafka, results,
            "round " + round + ", transaction pooling, LISTEN on a direct connection");
        measure(pooled, pooled.store().build(), kafka, results,
            "round " + round + ", transaction pooling, LISTEN through the pooler (hears nothing: polling)");
      }
    }
    results.publish(Path.of("txbox-bench", "results"));
    return 0;
  }

  private void measure(BenchDatabase db, PostgresOutboxStore store, KafkaBroker kafka, Results results, String label)
      throws Exception {
    db.execute("TRUNCATE " + store.operator().outboxTable());
    CommitToAck run = new CommitToAck(WRITERS);
    try (Relay relay = Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .subscription("pooler-" + UUID.randomUUID().toString().substring(0, 8)).metrics(run.stamp()).build().start()) {
      Thread.sleep(4000); // the listener's check of its own NOTIFY takes up to 3 s
      run.write(db.dataSource, Outbox.create(store.writer()), 1_000, 1, seconds);
      Thread.sleep(3000); // let the last events arrive
    }
    long[] sorted = run.sortedMicros();
    System.out.printf("%s: %,d of %,d events measured, p50 %.2f ms, p99 %.2f ms%n", label, sorted.length,
        run.committedCount(), WriteOverhead.percentile(sorted, 50) / 1000.0, WriteOverhead.percentile(sorted, 99) / 1000.0);
    results.add(label + ": p50", WriteOverhead.percentile(sorted, 50) / 1000.0, "ms");
    results.add(label + ": p99", WriteOverhead.percentile(sorted, 99) / 1000.0, "ms");
  }
}
