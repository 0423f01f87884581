package io.txbox.bench;

import io.txbox.Message;
import io.txbox.cdc.LogicalRelay;
import io.txbox.cdc.LogicalReplication;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Metrics;
import io.txbox.testkit.TestDatabase;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Properties;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/**
 * txbox's logical relay in a JVM of its own, with default settings, as {@code txbox-bench debezium}
 * runs Debezium: killed with SIGKILL to count what it sends twice, or stopped with SIGTERM, when
 * it writes one line "event-id epoch-microseconds" per acknowledgement to the acks file (none when
 * it drains: see N below).
 * Arguments: JDBC URL, schema, table prefix, slot (and publication), bootstrap servers, acks file,
 * and optionally a count N: it then prints "first acknowledged in X ms" at the first
 * acknowledgement and "drained N in X ms" once N events are acknowledged, timed from the start of
 * {@code main}, as Debezium's engine times its drain.
 */
public final class LogicalRelayProcess {
  private LogicalRelayProcess() {}

  public static void main(String[] args) throws Exception {
    long startedAt = System.nanoTime();
    boolean draining = args.length > 6;
    long expect = draining ? Long.parseLong(args[6]) : Long.MAX_VALUE;
    AtomicLong acknowledgedInAll = new AtomicLong();
    Queue<String> acks = new ConcurrentLinkedQueue<>();
    Metrics recording = new Metrics() {
      @Override
      public void published(String subscription, List<Message> acknowledged) {
        if (!draining) { // a drain writes no acks file, and does not pay for one
          long now = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
          acknowledged.forEach(m -> acks.add(m.id() + " " + now));
        }
        long before = acknowledgedInAll.getAndAdd(acknowledged.size());
        if (before == 0 && draining) {
          System.out.printf("first acknowledged in %d ms%n", (System.nanoTime() - startedAt) / 1_000_000);
        }
        if (before < expect && before + acknowledged.size() >= expect) {
          System.out.printf("drained %d in %d ms%n", expect, (System.nanoTime() - startedAt) / 1_000_000);
        }
      }
    };
    var pool = TestDatabase.pool(args[0], 2);
    PostgresOutboxStore store = PostgresOutboxStore.builder(pool).schema(args[1]).tablePrefix(args[2]).build();
    LogicalReplication replication = LogicalReplication.builder(pool, store).slot(args[3]).publication(args[3]).build();
    LogicalRelay relay = LogicalRelay.builder(replication, KafkaPublisher.builder().bootstrapServers(args[4]).build())
        .connection(args[0], new Properties()).metrics(recording).build().start();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      relay.close();
      try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(args[5])))) {
        acks.forEach(out::println);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }, "txbox-bench-acks"));
    new CountDownLatch(1).await(); // until the benchmark stops or kills this JVM
  }
}
