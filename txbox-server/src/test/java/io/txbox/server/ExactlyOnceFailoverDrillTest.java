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
 * Exactly-once drill 5, for the table relay: a PostgreSQL primary with a synchronous standby, both
 * the test's own, and two relays and a writer that reach whichever is the primary through one
 * two-host URL. Mid-drain the primary is stopped as a crash would stop it and the standby
 * promoted. The relays' database checkpoints on the new primary are whatever the standby had;
 * Kafka's are the truth, and the relays read them back. Every outbox row the new primary holds is
 * read once by a read_committed consumer, in order per key.
 */
@FaultDrill
class ExactlyOnceFailoverDrillTest extends OwnServerExactlyOnceDrill {
  private static final Logger log = LoggerFactory.getLogger(ExactlyOnceFailoverDrillTest.class);
  private PostgresNode primary;
  private PostgresNode standby;

  @BeforeEach
  void setUp() {
    primary = PostgresNode.primary(PostgresNode.debianBinaries(15), Map.of("max_connections", "200"));
    standby = primary.standby("standby1", false, Map.of());
    primary.set(Map.of("synchronous_standby_names", "standby1")); // a commit returns once the standby has it
    createOutbox();
  }

  @AfterEach
  void tearDown() {
    standby.close();
    primary.close();
  }

  @Override
  String url() {
    return PostgresNode.jdbcUrl("postgres", primary, standby);
  }

  @Test
  void aFailoverToASynchronousStandbyMidDrainDeliversEveryEventTheNewPrimaryHoldsOnce() throws Exception {
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
      primary.stopImmediately(); // mid-drain: rounds in hand, Kafka transactions open, sessions cut
      standby.promote();
      dropBrokenConnections();
      writer.get(180, TimeUnit.SECONDS);

      int kept = expectedByKey().values().stream().mapToInt(List::size).sum();
      log.info("failover drill: {} events read before the failover, {} held by the new primary",
          TopicReader.distinctIds(before).size(), kept);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= kept, Duration.ofSeconds(180));
      List<TopicReader.Received> got = reader.readUntil(r -> false, Duration.ofSeconds(2));
      assertDeliveredOnceInOrder(got, kept, relays);
    }
  }
}
