package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.spring.internal.ContextBound;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A real Spring Boot application context, with the starter, against the machine's PostgreSQL and
 * a real Kafka broker: what a Spring user of txbox sees.
 */
@SpringBootTest(classes = ShopApplication.class, properties = {
    "txbox.broker=kafka",
    "txbox.relay.idle-interval=50ms",
    "txbox.metrics.backlog-refresh=0s",
    "management.health.txbox.enabled=true"})
@Import(StarterKafkaTest.DropSchemaOnClose.class)
@DirtiesContext
class StarterKafkaTest {
  private static final String TOPIC = "shop-orders-" + UUID.randomUUID();
  private static TestDatabase db;

  @Autowired ShopApplication.OrderService orders;
  @Autowired JdbcTemplate jdbc;
  @Autowired Outbox outbox;
  @Autowired MeterRegistry registry;
  @Autowired HealthEndpoint health;
  @Autowired ContextBound<Relay> relay;

  @BeforeAll
  static void createTopicAndTables() {
    KafkaBroker.shared().createTopic(TOPIC, 3);
    db = TestDatabase.create();
    JdbcTemplate jdbc = new JdbcTemplate(db.dataSource());
    jdbc.execute("CREATE TABLE " + db.schema() + ".orders (id text PRIMARY KEY)");
    jdbc.execute("CREATE TABLE " + db.schema() + ".handled (order_id text, message_id uuid)");
  }

  /** Drops the schema when the context closes, after the relay and listeners stopped. */
  @TestConfiguration
  static class DropSchemaOnClose {
    @Bean(destroyMethod = "close")
    TestDatabase shopDatabase() {
      return db;
    }
  }

  @DynamicPropertySource
  static void connections(DynamicPropertyRegistry properties) {
    properties.add("spring.datasource.url", TestDatabase::jdbcUrl);
    properties.add("txbox.schema", () -> db.schema());
    properties.add("shop.schema", () -> db.schema());
    properties.add("shop.topic", () -> TOPIC);
    properties.add("txbox.kafka.bootstrap-servers", () -> KafkaBroker.shared().bootstrapServers());
  }

  @Test
  void anOrderWrittenInATransactionalMethodIsHandledByTheListener() throws Exception {
    orders.place("order-1");
    await().atMost(Duration.ofSeconds(30)).until(() -> handled("order-1") == 1);
    assertThat(count("orders WHERE id = 'order-1'")).isEqualTo(1);
  }

  @Test
  void aRolledBackTransactionSendsNothing() throws Exception {
    assertThatThrownBy(() -> orders.placeAndFail("order-refused")).hasMessageContaining("payment refused");
    orders.place("order-after-refusal");
    await().atMost(Duration.ofSeconds(30)).until(() -> handled("order-after-refusal") == 1);
    assertThat(count("orders WHERE id = 'order-refused'")).isZero();
    assertThat(count("txbox_outbox WHERE key = 'order-refused'")).isZero();
    assertThat(handled("order-refused")).isZero();
  }

  @Test
  void sendOutsideATransactionIsRefusedAndSaysHowToOpenOne() {
    Message message = Message.builder().type("T").destination(TOPIC).payload(new byte[0]).build();
    assertThatThrownBy(() -> outbox.send(message))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("outside a transaction")
        .hasMessageContaining("@Transactional");
  }

  @Test
  void theMetersMoveAsEventsFlowDuplicatesAreAbsorbedAndAPoisonEventIsDeadLettered() throws Exception {
    double published = counter("txbox.relay.published");
    double processed = counter("txbox.inbox.processed");
    double duplicates = counter("txbox.inbox.duplicates");
    double deadLetters = counter("txbox.relay.dead.letters");

    Message twice = Message.builder().id(UUID.randomUUID()).type("OrderPlaced").destination(TOPIC)
        .key("order-twice").payload("x".getBytes()).build();
    orders.send(twice);
    orders.send(twice); // the same event id written twice: relayed twice, handled once
    orders.send(Message.builder().type("Huge").destination(TOPIC).key("poison")
        .payload(new byte[2 * 1024 * 1024]).build()); // larger than the producer's max.request.size

    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
      assertThat(counter("txbox.relay.dead.letters") - deadLetters).isEqualTo(1);
      assertThat(counter("txbox.relay.published") - published).isGreaterThanOrEqualTo(2);
      assertThat(counter("txbox.inbox.duplicates") - duplicates).isGreaterThanOrEqualTo(1);
    });
    assertThat(handled("order-twice")).isEqualTo(1);
    assertThat(counter("txbox.inbox.processed") - processed).isGreaterThanOrEqualTo(1);
    assertThat(registry.get("txbox.relay.lag").timer().count()).isPositive();
    await().atMost(Duration.ofSeconds(30)).until(
        () -> registry.get("txbox.outbox.pending").gauge().value() == 0);
  }

  @Test
  void healthIsDownWhileTheRelayIsStoppedAndNamesTheOldestPendingEvent() throws Exception {
    await().atMost(Duration.ofSeconds(30)).until(() -> health.healthForPath("txbox").getStatus().equals(Status.UP));
    relay.stop();
    try {
      orders.send(Message.builder().type("Late").destination(TOPIC).key("late")
          .createdAt(Instant.now().minus(Duration.ofHours(1))).payload(new byte[0]).build());
      Health down = (Health) health.healthForPath("txbox");
      assertThat(down.getStatus()).isEqualTo(Status.DOWN);
      assertThat(down.getDetails()).containsEntry("relay", "stopped").containsEntry("pending", 1L);
      assertThat((String) down.getDetails().get("oldestPendingAge")).startsWith("PT1H");
    } finally {
      relay.start();
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> health.healthForPath("txbox").getStatus().equals(Status.UP));
    await().atMost(Duration.ofSeconds(30)).until(() -> handled("late") == 1);
  }

  private double counter(String name) {
    return registry.find(name).counters().stream().mapToDouble(c -> c.count()).sum()
        + registry.find(name).functionCounters().stream().mapToDouble(c -> c.count()).sum();
  }

  private int handled(String orderId) {
    return count("handled WHERE order_id = '" + orderId + "'");
  }

  private int count(String fromWhere) {
    return jdbc.queryForObject("SELECT count(*) FROM " + db.schema() + "." + fromWhere, Integer.class);
  }

}
