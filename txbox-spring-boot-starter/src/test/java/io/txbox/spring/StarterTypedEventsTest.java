package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.jackson.EventHandlers;
import io.txbox.jackson.EventTypes;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Typed events in a Spring application against PostgreSQL and Kafka: the application's
 * {@code EventTypes} bean, built on Boot's {@code ObjectMapper} (here set to snake_case), writes
 * what {@code outbox.sendEvent} is given, and an {@link InboxListener} with typed handlers reads
 * every version back as today's class.
 */
@SpringBootTest(classes = StarterTypedEventsTest.TypedShop.class, properties = {
    "txbox.broker=kafka",
    "txbox.relay.idle-interval=50ms",
    "txbox.janitor.enabled=false",
    // Boot 3's ObjectMapper reads the first; Boot 4's Jackson 2 module (spring-boot-jackson2) the second.
    "spring.jackson.property-naming-strategy=SNAKE_CASE",
    "spring.jackson2.property-naming-strategy=SNAKE_CASE"})
@DirtiesContext
class StarterTypedEventsTest {
  private static final String TOPIC = "typed-orders-" + UUID.randomUUID();
  private static TestDatabase db;

  @Autowired Outbox outbox;
  @Autowired TransactionTemplate transactions;
  @Autowired JdbcTemplate jdbc;

  /** Version 2: version 1 had {@code amount}, a decimal string, where this has minor units. */
  record OrderPlaced(String orderId, String customerId, long amountMinor) {}

  /** An application with typed events, as a user of the starter and txbox-jackson writes it. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class TypedShop {
    @Bean
    EventTypes events(ObjectMapper mapper, @Value("${shop.topic}") String topic) {
      return EventTypes.builder(mapper)
          .type("OrderPlaced", 2, OrderPlaced.class, topic, OrderPlaced::customerId)
          .upcast("OrderPlaced", 1, v1 -> v1.put("amount_minor",
              new BigDecimal(v1.remove("amount").asText()).movePointRight(2).longValueExact()))
          .build();
    }

    @Bean
    InboxListener billing(EventTypes events, @Value("${shop.topic}") String topic, @Value("${shop.schema}") String schema) {
      return InboxListener.consumer("billing").from(topic).handler(EventHandlers.builder(events)
          .on(OrderPlaced.class, (tx, order, meta) -> {
            try (PreparedStatement p = tx.prepareStatement("INSERT INTO " + schema + ".billed (order_id, customer_id,"
                + " amount_minor, written_version) VALUES (?, ?, ?, ?)")) {
              p.setString(1, order.orderId());
              p.setString(2, order.customerId());
              p.setLong(3, order.amountMinor());
              p.setInt(4, meta.writtenVersion());
              p.executeUpdate();
            }
          }).build());
    }

    /** Drops the schema when the context closes, after the relay and listener stopped. */
    @Bean(destroyMethod = "close")
    TestDatabase shopDatabase() {
      return db;
    }
  }

  @BeforeAll
  static void createTopicAndTables() {
    KafkaBroker.shared().createTopic(TOPIC, 3);
    db = TestDatabase.create();
    new JdbcTemplate(db.dataSource()).execute("CREATE TABLE " + db.schema() + ".billed (order_id text,"
        + " customer_id text, amount_minor bigint, written_version int)");
  }

  @DynamicPropertySource
  static void connections(DynamicPropertyRegistry properties) {
    ShopProperties.register(properties, () -> db, TOPIC);
    properties.add("txbox.kafka.bootstrap-servers", () -> KafkaBroker.shared().bootstrapServers());
  }

  @Test
  void anEventObjectIsWrittenWithTheApplicationsObjectMapperAndEveryVersionIsHandledAsTodays() {
    transactions.executeWithoutResult(status -> send(Message.builder().type("OrderPlaced").version(1)
        .destination(TOPIC).key("c-1").payload("{\"order_id\":\"o-1\",\"customer_id\":\"c-1\",\"amount\":\"12.50\"}"
            .getBytes(StandardCharsets.UTF_8), "application/json").build())); // as last year's service wrote it
    transactions.executeWithoutResult(status -> sendEvent(new OrderPlaced("o-2", "c-1", 990)));

    String written = new String(jdbc.queryForObject("SELECT payload FROM " + db.schema() + ".txbox_outbox"
        + " WHERE version = 2", byte[].class), StandardCharsets.UTF_8);
    assertThat(written).isEqualTo("{\"order_id\":\"o-2\",\"customer_id\":\"c-1\",\"amount_minor\":990}");
    await().atMost(Duration.ofSeconds(30)).until(() -> billed().size() == 2);
    assertThat(billed()).containsExactly("o-1 c-1 1250 v1", "o-2 c-1 990 v2");
  }

  private List<String> billed() {
    return jdbc.queryForList("SELECT order_id || ' ' || customer_id || ' ' || amount_minor || ' v' || written_version"
        + " FROM " + db.schema() + ".billed ORDER BY order_id", String.class);
  }

  private void send(Message message) {
    try {
      outbox.send(message);
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private void sendEvent(Object event) {
    try {
      outbox.sendEvent(event);
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
