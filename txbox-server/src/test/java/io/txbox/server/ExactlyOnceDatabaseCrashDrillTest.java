package io.txbox.server;

import static org.awaitility.Awaitility.await;

import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.PostgresNode;
import io.txbox.testkit.TopicReader;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exactly-once drill 4: the database crashes (an immediate shutdown, no checkpoint) and restarts
 * while two table relays drain, on a PostgreSQL server of the test's own. Every event the database
 * kept (every outbox row after recovery, whether or not its writer saw the commit return) is read
 * once by a read_committed consumer, in order per key.
 */
@FaultDrill
class ExactlyOnceDatabaseCrashDrillTest extends OwnServerExactlyOnceDrill {
  private static final Logger log = LoggerFactory.getLogger(ExactlyOnceDatabaseCrashDrillTest.class);
  private PostgresNode node;

  @BeforeEach
  void setUp() {
    node = PostgresNode.primary(PostgresNode.debianBinaries(15), Map.of());
    createOutbox();
  }

  @AfterEach
  void tearDown() {
    node.close();
  }

  @Override
  String url() {
    return node.jdbcUrl("postgres");
  }

  @Test
  void aDatabaseCrashAndRestartMidDrainDeliversEveryEventItKeptOnce() throws Exception {
    int events = 30_000;
    kafka.createTopic(topic, 8);
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      relays.start(dir, relayArgs(0));
      relays.start(dir, relayArgs(1));
      await().atMost(Duration.ofSeconds(60)).until(() -> owners() == 2);
      CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> writeThroughOutages(events, 10));
      List<TopicReader.Received> before = reader.readUntil(
          r -> TopicReader.distinctIds(r).size() >= events / 4, Duration.ofSeconds(60));
      node.stopImmediately(); // mid-drain: rounds in hand, Kafka transactions open, sessions cut
      node.start();           // crash recovery from the WAL
      dropBrokenConnections();
      writer.get(180, TimeUnit.SECONDS);

      int kept = expectedByKey().values().stream().mapToInt(List::size).sum();
      log.info("database crash drill: {} events read before the crash, {} kept by the database",
          TopicReader.distinctIds(before).size(), kept);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= kept, Duration.ofSeconds(180));
      List<TopicReader.Received> got = reader.readUntil(r -> false, Duration.ofSeconds(2));
      assertDeliveredOnceInOrder(got, kept, relays);
    }
  }
}
