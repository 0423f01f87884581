package io.txbox.bench;

import io.txbox.Message;
import io.txbox.cdc.LogicalRelay;
import io.txbox.cdc.LogicalReplication;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.kafka.KafkaPublisher;
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

/**
 * txbox's logical relay in a JVM of its own, with default settings, as {@code txbox-bench debezium}
 * runs Debezium: killed with SIGKILL to count what it sends twice, or stopped with SIGTERM, when
 * it writes one line "event-id epoch-microseconds" per acknowledgement to the acks file.
 * Arguments: JDBC URL, schema, table prefix, slot (and publication), bootstrap servers, acks file.
 */
public final class LogicalRelayProcess {
  private LogicalRelayProcess() {}

  public static void main(String[] args) throws Exception {
    Queue<String> acks = new ConcurrentLinkedQueue<>();
    Metrics recording = new Metrics() {
      @Override
      public void published(String subscription, List<Message> acknowledged) {
        long now = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
        acknowledged.forEach(m -> acks.add(m.id() + " " + now));
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
