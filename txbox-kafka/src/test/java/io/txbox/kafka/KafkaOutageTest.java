package io.txbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Relay;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Stops a broker this test started itself, never the shared one. */
class KafkaOutageTest {

  @Test
  void theRelayRetriesThroughAKafkaOutageAndDeliveryResumesOnItsOwn() throws Exception {
    try (KafkaBroker kafka = KafkaBroker.start("512m"); OutboxFixture fixture = new OutboxFixture(8)) {
      kafka.createTopic("orders", 4);
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), "orders");
          Relay relay = fixture.relay(kafka.bootstrapServers()).build().start()) {
        // The broker dies while events flow, so that requests are in flight when it goes.
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> write(fixture, 2000));
        reader.readUntil(r -> r.size() >= 100, Duration.ofSeconds(30));
        kafka.stop();
        writer.get(60, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(fixture.count(
            "SELECT count(*) FROM {schema}.txbox_subscription WHERE last_error IS NOT NULL")).isPositive());
        kafka.restart();

        List<TopicReader.Received> got =
            reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 2000, Duration.ofSeconds(90));
        assertThat(TopicReader.distinctIds(got)).hasSize(2000);
        assertThat(TopicReader.firstDeliveriesByKey(got)).isEqualTo(fixture.expectedByKey("orders"));
        assertThat(fixture.count("SELECT count(*) FROM {schema}.txbox_dead_letter"))
            .as("an outage dead-letters nothing").isZero();
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(fixture.count(
            "SELECT count(*) FROM {schema}.txbox_subscription WHERE last_error IS NOT NULL")).isZero());
      }
    }
  }

  private static void write(OutboxFixture fixture, int events) {
    try {
      fixture.commitMany("orders", events, 5);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
