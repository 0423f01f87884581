package io.txbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.spi.Metrics;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Stops a broker this test started itself, never the shared one. */
@FaultDrill
class KafkaOutageTest {
  private static final Logger log = LoggerFactory.getLogger(KafkaOutageTest.class);

  /**
   * Kafka stays down until some event has failed five times, where the fixture's retry policy
   * allows three attempts: the outage outlasts the policy's whole budget, and nothing is
   * dead-lettered (the rule of {@code RetryBudget}, which the logical relay follows too).
   */
  @Test
  void theRelayRetriesThroughAKafkaOutageLongerThanTheWholeRetryBudgetAndDeadLettersNothing() throws Exception {
    Map<UUID, AtomicInteger> failures = new ConcurrentHashMap<>();
    Metrics counting = new Metrics() {
      @Override
      public void retrying(String subscription, Message message, int attempts, Throwable error) {
        failures.computeIfAbsent(message.id(), id -> new AtomicInteger()).incrementAndGet();
      }
    };
    try (KafkaBroker kafka = KafkaBroker.start("512m"); OutboxFixture fixture = new OutboxFixture(8)) {
      kafka.createTopic("orders", 4);
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), "orders");
          // A producer that gives up after 2.5 s (the fixture's 6 s, less): each failed round is
          // shorter, so the outage outlasts the retry budget sooner; what it proves is the same.
          Relay relay = fixture.relay(kafka.bootstrapServers(), Duration.ofMillis(2500))
              .metrics(counting).build().start()) {
        // The broker dies while events flow, so that requests are in flight when it goes.
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> write(fixture, 2000));
        reader.readUntil(r -> r.size() >= 100, Duration.ofSeconds(30));
        log.info("outage test: 100 relayed, stopping Kafka");
        kafka.stop();
        writer.get(60, TimeUnit.SECONDS);
        log.info("outage test: all 2000 written");
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(fixture.count(
            "SELECT count(*) FROM {schema}.txbox_subscription WHERE last_error IS NOT NULL")).isPositive());
        await().atMost(Duration.ofSeconds(120)).until(() -> failures.values().stream().anyMatch(n -> n.get() > 4));
        assertThat(fixture.count("SELECT count(*) FROM {schema}.txbox_dead_letter"))
            .as("dead-lettered during the outage").isZero();
        log.info("outage test: retries exhausted with nothing dead-lettered, starting Kafka again");
        kafka.restart();
        log.info("outage test: Kafka serves again");

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

  /**
   * In an outage the broker is asked about a topic once, not before every batch: a record that
   * expired unanswered makes the publisher forget its topic (a refusal may mean the topic changed),
   * and asking a broker that is down waits 10 s. A relay saw each retry of an outage take 11 to
   * 21 s for it, whatever its retry policy said. After one unanswered question the broker is not
   * asked for 30 s, so the batches after it wait only for the producer's own timeouts.
   */
  @Test
  void aBrokerThatIsDownIsAskedAboutATopicOnceNotBeforeEveryBatch() throws Exception {
    try (KafkaBroker kafka = KafkaBroker.start("384m");
        KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers())
            .property("delivery.timeout.ms", "3000").property("request.timeout.ms", "1000")
            .property("max.block.ms", "1000")
            // The client's default (rebootstrap) may drop what it knows once no broker answers, and
            // then fails the next record on metadata, not by expiry: a CI run did. The expiry is
            // the path this test is about; the question's pause is the same either way.
            .property("metadata.recovery.strategy", "none").build()) {
      kafka.createTopic("orders", 1);
      assertThat(publisher.publish(List.of(OutboxFixture.event("orders", "k", 1))).failures()).isEmpty();
      kafka.stop(); // the producer still has the topic's metadata: the next record waits, then expires
      assertThat(publisher.publish(List.of(OutboxFixture.event("orders", "k", 2))).failure(0))
          .hasMessageContaining("Expiring");
      assertThat(publisher.publish(List.of(OutboxFixture.event("orders", "k", 3))).failure(0))
          .as("asks about the forgotten topic, unanswered").isNotNull();

      for (int seq = 4; seq < 7; seq++) {
        long start = System.nanoTime();
        assertThat(publisher.publish(List.of(OutboxFixture.event("orders", "k", seq))).failure(0)).isNotNull();
        assertThat(Duration.ofNanos(System.nanoTime() - start))
            .as("batch %d: the producer's max.block.ms (1 s) and a margin, not another question's 10 s", seq)
            .isLessThan(Duration.ofSeconds(6));
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
