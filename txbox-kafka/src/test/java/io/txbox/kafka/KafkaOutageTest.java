package io.txbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Relay;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Stops a broker this test started itself, never the shared one. */
class KafkaOutageTest {

  @Test
  void theRelayRetriesThroughAKafkaOutageAndDeliveryResumesOnItsOwn() throws Exception {
    try (KafkaBroker kafka = KafkaBroker.start("512m");
        OutboxFixture fixture = new OutboxFixture(8)) {
      kafka.createTopic("orders", 4);
      try (Relay relay = fixture.relay(kafka.bootstrapServers()).build().start()) {
        fixture.commitMany("orders", 100, 5);
        OutboxFixture.readAll(kafka.bootstrapServers(), "orders", 100);

        kafka.stop();
        fixture.commitMany("orders", 200, 5);
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(fixture.count(
            "SELECT count(*) FROM {schema}.txbox_subscription WHERE last_error IS NOT NULL")).isPositive());
        kafka.restart();

        List<TopicReader.Received> got = OutboxFixture.readAll(kafka.bootstrapServers(), "orders", 300);
        assertThat(TopicReader.firstDeliveriesByKey(got)).isEqualTo(fixture.expectedByKey("orders"));
        assertThat(fixture.count("SELECT count(*) FROM {schema}.txbox_dead_letter"))
            .as("an outage dead-letters nothing").isZero();
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(fixture.count(
            "SELECT count(*) FROM {schema}.txbox_subscription WHERE last_error IS NOT NULL")).isZero());
      }
    }
  }
}
