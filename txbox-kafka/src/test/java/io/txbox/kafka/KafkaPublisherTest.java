package io.txbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.Message;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;

class KafkaPublisherTest {
  private final KafkaBroker kafka = KafkaBroker.shared();

  @Test
  void aBatchIsAcknowledgedWithKeysAndHeadersIntact() {
    String topic = "p-" + UUID.randomUUID();
    kafka.createTopic(topic, 2);
    Message m = Message.builder().type("OrderPlaced").version(2).key("order-7").destination(topic)
        .payload("{\"id\":7}".getBytes(StandardCharsets.UTF_8), "application/json")
        .header("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").build();
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build()) {
      PublishResult result = publisher.publish(List.of(m));
      assertThat(result.failures()).isEmpty();
    }
    try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      TopicReader.Received r = reader.readUntil(l -> !l.isEmpty(), Duration.ofSeconds(30)).get(0);
      assertThat(r.key()).isEqualTo("order-7");
      assertThat(new String(r.value(), StandardCharsets.UTF_8)).isEqualTo("{\"id\":7}");
      assertThat(r.headers())
          .containsEntry("txbox-id", m.id().toString())
          .containsEntry("txbox-type", "OrderPlaced")
          .containsEntry("txbox-version", "2")
          .containsEntry("content-type", "application/json")
          .containsEntry("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    }
  }

  @Test
  void anEventRefusedForItsSizeIsSentOnceTheTopicsLimitIsRaisedWithoutWaitingForTheCache() throws Exception {
    String topic = "limit-" + UUID.randomUUID();
    kafka.createTopic(topic, 1, Map.of("max.message.bytes", "2000"));
    Message large = Message.builder().type("Big").key("k").destination(topic).payload(new byte[5_000]).build();
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build()) {
      assertThat(publisher.publish(List.of(large)).failure(0)).isInstanceOf(PermanentPublishException.class)
          .hasMessageContaining("accepts at most 2000 bytes (its max.message.bytes");

      try (Admin admin = kafka.admin()) { // the operator raises the limit, then retries the dead letter
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
            new ConfigEntry("max.message.bytes", "100000"), AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
      }
      PublishResult retried = publisher.publish(List.of(large));
      assertThat(retried.failure(0)).as("retried, not dead-lettered again").isNotInstanceOf(PermanentPublishException.class)
          .hasMessageContaining("max.message.bytes changed from 2000 to 100000");
      assertThat(publisher.publish(List.of(large)).failures()).as("the relay's next attempt").isEmpty();
    }
  }

  @Test
  void aMissingTopicIsAPermanentErrorFoundWithoutWaitingForMetadata() {
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build()) {
      long start = System.nanoTime();
      PublishResult result = publisher.publish(List.of(OutboxFixture.event("missing-" + UUID.randomUUID(), "k", 1)));
      assertThat(result.failure(0)).isInstanceOf(PermanentPublishException.class)
          .hasMessageContaining("does not exist").hasMessageContaining("auto.create.topics.enable is false");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(9)); // max.block.ms is 10 s
    }
  }

  @Test
  void aTopicThatDoesNotExistYetIsCreatedByTheSendOnABrokerThatCreatesTopics() {
    String topic = "created-on-send-" + UUID.randomUUID();
    try (KafkaBroker creating = KafkaBroker.start("384m", Map.of("auto.create.topics.enable", "true"));
        KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(creating.bootstrapServers()).build()) {
      PublishResult result = publisher.publish(List.of(OutboxFixture.event(topic, "k", 1)));

      assertThat(result.failures()).as("not dead-lettered: the send creates the topic").isEmpty();
      try (TopicReader reader = TopicReader.open(creating.bootstrapServers(), topic)) {
        assertThat(reader.readUntil(l -> !l.isEmpty(), Duration.ofSeconds(30))).hasSize(1);
      }
    }
  }

  @Test
  void settingsThatWouldBreakDeliveryAreRefused() {
    assertThatThrownBy(() -> KafkaPublisher.builder().bootstrapServers("x:1").property("acks", "1").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("acks must be all");
    assertThatThrownBy(() -> KafkaPublisher.builder().bootstrapServers("x:1").property("enable.idempotence", "false").build())
        .hasMessageStartingWith("enable.idempotence must be true");
    assertThatThrownBy(() -> KafkaPublisher.builder().build())
        .hasMessageStartingWith("bootstrap.servers must be set");
  }
}
