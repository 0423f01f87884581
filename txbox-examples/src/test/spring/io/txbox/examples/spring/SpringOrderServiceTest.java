package io.txbox.examples.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.examples.orders.ShopEvents;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionTemplate;

/** The Spring order service as its users run it: over HTTP, against PostgreSQL and Kafka. */
@SpringBootTest(classes = SpringOrderService.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "txbox.relay.idle-interval=50ms")
@Import(SpringOrderServiceTest.DropSchemaOnClose.class)
@DirtiesContext
class SpringOrderServiceTest {
  private static final String TOPIC = "spring-orders-" + UUID.randomUUID();
  private static TestDatabase db;
  private static final HttpClient http = HttpClient.newHttpClient();

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;

  @BeforeAll
  static void createTopic() {
    KafkaBroker.shared().createTopic(TOPIC, 3);
    db = TestDatabase.create();
  }

  @DynamicPropertySource
  static void connections(DynamicPropertyRegistry properties) {
    properties.add("spring.datasource.url", TestDatabase::jdbcUrl);
    properties.add("txbox.schema", () -> db.schema());
    properties.add("shop.schema", () -> db.schema());
    properties.add("shop.topic", () -> TOPIC);
    properties.add("txbox.kafka.bootstrap-servers", () -> KafkaBroker.shared().bootstrapServers());
  }

  /**
   * Drops the schema after the relay and the listener stopped. Imported, not annotated, so that
   * the service started by other tests' child JVMs does not scan it.
   */
  static class DropSchemaOnClose {
    @Bean(destroyMethod = "close")
    TestDatabase shopDatabase() {
      return db;
    }
  }

  @Test
  void anOrderPostedOverHttpReservesStockOnceAndShowsOnTheActuator() throws Exception {
    for (int i = 0; i < 5; i++) {
      assertThat(post("/orders?sku=sku-3&quantity=2").statusCode()).isEqualTo(200);
    }
    assertThat(post("/orders?sku=no-such-sku").statusCode()).isEqualTo(400);

    await().atMost(Duration.ofSeconds(30)).until(() -> reserved("sku-3") == 10);
    assertThat(jdbc.queryForObject("SELECT count(*) FROM " + db.schema() + ".reservation WHERE in_order",
        Integer.class)).isEqualTo(5);

    HttpResponse<String> health = get("/actuator/health/txbox");
    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(health.body()).contains("\"status\":\"UP\"").contains("\"relay\":\"running\"");
    assertThat(get("/actuator/metrics/txbox.relay.published").body()).contains("\"statistic\":\"COUNT\"");
  }

  @Test
  void ordersWrittenByEarlierVersionsOfTheServiceAreReservedAsVersionThreeInOrder(@Autowired Outbox outbox,
      @Autowired TransactionTemplate transactions) throws Exception {
    jdbc.update("UPDATE " + db.schema() + ".order_counter SET placed = 2 WHERE sku = 'sku-5'"); // by those versions
    transactions.executeWithoutResult(status -> send(outbox, 1, "{\"orderId\":\"" + UUID.randomUUID() + "\","
        + "\"customer\":\"c-1\",\"sku\":\"sku-5\",\"quantity\":1,\"sequence\":1,\"amount\":\"12.50\"}"));
    transactions.executeWithoutResult(status -> send(outbox, 2, "{\"orderId\":\"" + UUID.randomUUID() + "\","
        + "\"customerId\":\"c-2\",\"sku\":\"sku-5\",\"quantity\":2,\"sequence\":2,\"currency\":\"EUR\","
        + "\"amount\":\"25.00\"}"));
    assertThat(post("/orders?customer=c-3&sku=sku-5&quantity=3").statusCode()).isEqualTo(200); // version 3

    await().atMost(Duration.ofSeconds(30)).until(() -> reserved("sku-5") == 6);
    assertThat(jdbc.queryForList("SELECT customer_id || ' ' || amount_minor || ' ' || in_order FROM " + db.schema()
        + ".reservation WHERE sku = 'sku-5' ORDER BY sequence", String.class))
        .containsExactly("c-1 1250 true", "c-2 2500 true", "c-3 3750 true");
  }

  /** An {@code OrderPlaced} as version {@code version} of the service wrote it. */
  private static void send(Outbox outbox, int version, String json) {
    try {
      outbox.send(Message.builder().type(ShopEvents.ORDER_PLACED).version(version).destination(TOPIC).key("sku-5")
          .payload(json.getBytes(StandardCharsets.UTF_8), "application/json").build());
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private long reserved(String sku) {
    return jdbc.queryForObject("SELECT reserved FROM " + db.schema() + ".stock WHERE sku = ?", Long.class, sku);
  }

  private HttpResponse<String> post(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
