package io.txbox.demo;

import io.txbox.testkit.KafkaBroker;
import java.io.PrintStream;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

/** Kafka: a topic of {@value #PARTITIONS} partitions, on the given brokers or on one of the demo's own. */
final class KafkaDemoBroker implements DemoBroker {
  static final int PARTITIONS = 8;
  private final KafkaBroker own;
  private final String bootstrapServers;
  private final String topic;
  private final Admin admin;

  KafkaDemoBroker(String bootstrapServers, String run, PrintStream out) throws Exception {
    if (bootstrapServers == null) {
      out.println("starting a Kafka broker (KRaft, from the Kafka jars; --kafka-bootstrap-servers to use yours)...");
      own = KafkaBroker.start("768m");
      bootstrapServers = own.bootstrapServers();
    } else {
      own = null;
    }
    this.bootstrapServers = bootstrapServers;
    this.topic = "orders-" + run;
    this.admin = Admin.create(Map.<String, Object>of("bootstrap.servers", bootstrapServers));
    admin.createTopics(List.of(new NewTopic(topic, Optional.of(PARTITIONS), Optional.empty())))
        .all().get(60, TimeUnit.SECONDS);
  }

  @Override
  public String name() {
    return "Kafka";
  }

  @Override
  public String destination() {
    return topic;
  }

  @Override
  public List<String> relayArgs() {
    return List.of("--kafka-bootstrap-servers", bootstrapServers);
  }

  @Override
  public List<String> inventoryArgs(String member) {
    return List.of("--broker", "kafka", "--bootstrap-servers", bootstrapServers, "--topic", topic, "--member", member);
  }

  /** Records in the topic: the sum of its partitions' end offsets. */
  @Override
  public long held() {
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (int p = 0; p < PARTITIONS; p++) {
      latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
    }
    try {
      return admin.listOffsets(latest).all().get(5, TimeUnit.SECONDS).values().stream()
          .mapToLong(ListOffsetsResult.ListOffsetsResultInfo::offset).sum();
    } catch (Exception e) {
      throw new IllegalStateException("cannot read the topic's offsets: " + e, e);
    }
  }

  @Override
  public String heldLabel() {
    return "in Kafka";
  }

  @Override
  public void close() {
    admin.close();
    if (own != null) {
      own.close();
    }
  }
}
