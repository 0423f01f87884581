package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.KafkaCluster;
import io.txbox.testkit.TopicReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exactly-once through broker crashes: two {@code txbox relay --delivery exactly-once} processes
 * drain PostgreSQL into a three-node Kafka cluster (every topic on all three nodes, two in sync
 * required), and twice during the drain the node that is the transaction coordinator of a relay's
 * transactional id is SIGKILLed, then started again once the drain went on without it. Its open
 * transactions are left for the new coordinator to decide, and rounds whose commit the dead node
 * never answered have an unknown outcome: counted by a read_committed consumer, every event is
 * still read once, in order per key.
 */
@FaultDrill
class ExactlyOnceKafkaClusterDrillTest extends PostgresExactlyOnceDrill {
  private static final Logger log = LoggerFactory.getLogger(ExactlyOnceKafkaClusterDrillTest.class);
  private static final int EVENTS = 60_000;
  /** The writer spreads the events over this long, so that both kills fall in the drain. */
  private static final Duration WRITING = Duration.ofSeconds(60);
  private final KafkaCluster cluster = KafkaCluster.start("384m");

  @AfterEach
  void stopCluster() {
    cluster.close();
  }

  @Override
  String bootstrapServers() {
    return cluster.bootstrapServers();
  }

  @Test
  void twoCoordinatorNodesSigkilledDuringTheDrainLoseAndDoubleNothing() throws Exception {
    cluster.createTopic(topic, 8);
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(bootstrapServers(), topic);
        Admin admin = cluster.admin()) {
      relays.start(dir, relayArgs(0));
      relays.start(dir, relayArgs(1));
      await().atMost(Duration.ofSeconds(60)).until(() -> owners() == 2);
      CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> writeEvents(EVENTS, 50, WRITING));
      List<Integer> readAtKills = new ArrayList<>();
      for (int kill = 1; kill <= 2; kill++) {
        int read = readAtLeast(reader, kill * EVENTS / 8);
        int coordinator = coordinatorOfARelay(admin);
        log.info("Kafka cluster drill: {} of {} read, SIGKILL of node {}, a relay's transaction coordinator",
            read, EVENTS, coordinator);
        readAtKills.add(read);
        cluster.node(coordinator).stop();
        readAtLeast(reader, read + EVENTS / 10); // the drain goes on with two nodes
        cluster.node(coordinator).restart();
        awaitEveryReplicaInSync(admin); // before the next kill: never two replicas of a partition out
      }
      writer.get(180, TimeUnit.SECONDS);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= EVENTS, Duration.ofSeconds(180));
      List<TopicReader.Received> got = reader.readUntil(r -> false, Duration.ofSeconds(2));

      assertThat(readAtKills).as("events read at each kill: both during the drain").allMatch(n -> n < EVENTS);
      assertDeliveredOnceInOrder(got, EVENTS, relays);
    }
  }

  private static int readAtLeast(TopicReader reader, int events) {
    return TopicReader.distinctIds(
        reader.readUntil(r -> TopicReader.distinctIds(r).size() >= events, Duration.ofSeconds(120))).size();
  }

  /** The node coordinating the transactions of one of this drill's relays (the first Kafka lists). */
  private int coordinatorOfARelay(Admin admin) {
    return await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> {
      List<String> ids = admin.listTransactions().all().get(10, TimeUnit.SECONDS).stream()
          .map(TransactionListing::transactionalId).filter(id -> id.startsWith(transactionalIdPrefix())).sorted()
          .toList();
      return admin.describeTransactions(ids.subList(0, 1)).all().get(10, TimeUnit.SECONDS)
          .values().iterator().next().coordinatorId();
    }, id -> id > 0);
  }

  /** Until every partition of the data, progress and transaction-log topics has its three replicas in sync. */
  private void awaitEveryReplicaInSync(Admin admin) {
    await().atMost(Duration.ofSeconds(120)).ignoreExceptions().until(() -> admin
        .describeTopics(List.of(topic, transactionalIdPrefix() + "progress.default", "__transaction_state"))
        .allTopicNames().get(10, TimeUnit.SECONDS).values()
        .stream().map(TopicDescription::partitions).flatMap(List::stream)
        .allMatch(p -> p.isr().size() == KafkaCluster.NODES));
  }
}
