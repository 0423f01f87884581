package io.txbox.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;

/**
 * A real Kafka cluster of three nodes (KRaft, each node broker and controller), in child JVMs, set
 * up as production clusters are: every topic, the transaction log among them, on all three nodes
 * with two in sync required. A test kills nodes one at a time ({@link KafkaBroker#stop()} is a
 * SIGKILL) and starts them again; the quorum and every partition live on with two.
 *
 * <pre>{@code
 * try (KafkaCluster kafka = KafkaCluster.start("384m")) {
 *   kafka.createTopic("orders", 8);
 *   producerProps.put("bootstrap.servers", kafka.bootstrapServers());
 *   kafka.node(2).stop();     // SIGKILL one node
 *   kafka.node(2).restart();  // same port, same data
 * }
 * }</pre>
 */
public final class KafkaCluster implements AutoCloseable {
  /** Nodes in the cluster: the fewest that outlive one node's death with two replicas in sync. */
  public static final int NODES = 3;

  private final List<KafkaBroker> nodes;

  private KafkaCluster(List<KafkaBroker> nodes) {
    this.nodes = nodes;
  }

  /** Starts three nodes, each with the given heap ({@code -Xmx} value), and waits until all serve. */
  public static KafkaCluster start(String heap) {
    int[] ports;
    try {
      ports = LocalPorts.free(2 * NODES);
    } catch (IOException e) {
      throw new UncheckedIOException("no free ports for a Kafka cluster", e);
    }
    String voters = IntStream.range(0, NODES)
        .mapToObj(i -> (i + 1) + "@127.0.0.1:" + ports[2 * i + 1]).collect(Collectors.joining(","));
    String clusterId = Uuid.randomUuid().toString();
    List<KafkaBroker> nodes = new ArrayList<>();
    KafkaCluster cluster = new KafkaCluster(nodes);
    try {
      for (int i = 0; i < NODES; i++) {
        nodes.add(KafkaBroker.formatted(clusterId, ports[2 * i], ports[2 * i + 1], heap, Map.ofEntries(
            Map.entry("node.id", Integer.toString(i + 1)),
            Map.entry("controller.quorum.voters", voters),
            Map.entry("default.replication.factor", "3"),
            Map.entry("min.insync.replicas", "2"),
            Map.entry("offsets.topic.replication.factor", "3"),
            Map.entry("transaction.state.log.replication.factor", "3"),
            Map.entry("transaction.state.log.min.isr", "2"),
            Map.entry("share.coordinator.state.topic.replication.factor", "3"),
            Map.entry("share.coordinator.state.topic.min.isr", "2"))));
      }
      nodes.forEach(KafkaBroker::launch); // a node serves only once a quorum of them runs
      nodes.forEach(KafkaBroker::awaitReady);
      return cluster;
    } catch (IOException e) {
      cluster.close();
      throw new UncheckedIOException("could not start a Kafka cluster", e);
    } catch (InterruptedException e) {
      cluster.close();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting a Kafka cluster", e);
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  /** Every node's {@code host:port}, for {@code bootstrap.servers}. */
  public String bootstrapServers() {
    return nodes.stream().map(KafkaBroker::bootstrapServers).collect(Collectors.joining(","));
  }

  /** The node whose {@code node.id} (the broker id Kafka's own answers name) is {@code id}, 1 to 3. */
  public KafkaBroker node(int id) {
    return nodes.get(id - 1);
  }

  /**
   * Creates a topic on all three nodes with two in sync required, unless it exists, and waits
   * until every partition's leader answers.
   */
  public void createTopic(String name, int partitions) {
    try (Admin admin = admin()) {
      KafkaBroker.createTopic(admin, new NewTopic(name, partitions, (short) NODES)
          .configs(Map.of("min.insync.replicas", "2")));
    }
  }

  /** An admin client for the cluster; the caller closes it. */
  public Admin admin() {
    return KafkaBroker.admin(bootstrapServers());
  }

  /** Each node's recent log, for a failed assertion. */
  public String recentLogs() {
    StringBuilder logs = new StringBuilder();
    for (int i = 0; i < nodes.size(); i++) {
      logs.append("--- node ").append(i + 1).append(":\n").append(nodes.get(i).recentLog()).append('\n');
    }
    return logs.toString();
  }

  /** Stops every node and deletes its data. */
  @Override
  public void close() {
    nodes.forEach(KafkaBroker::close);
  }
}
