package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.txbox.Message;
import io.txbox.cdc.LogicalRelay;
import io.txbox.spring.TxboxService;
import io.txbox.testkit.KafkaBroker;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The starter in logical-decoding mode: {@code Outbox.send} in a Spring transaction writes a WAL
 * message, the logical relay streams the slot to a real Kafka broker, and the inventory listener
 * handles it. The machine's PostgreSQL runs with {@code wal_level=replica}, so this application
 * gets an embedded server with {@code logical}.
 */
@SpringBootTest(classes = ShopApplication.class, properties = {
    "txbox.broker=kafka",
    "txbox.relay.source=logical",
    "txbox.outbox.write-mode=wal-message",
    "txbox.metrics.slot-refresh=100ms",
    "management.health.txbox.enabled=true",
    "spring.datasource.username=postgres"})
@DirtiesContext
class StarterLogicalTest {
  private static final String TOPIC = "shop-logical-" + UUID.randomUUID();
  private static final String SCHEMA = "s_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  private static EmbeddedPostgres server;

  @Autowired ShopApplication.OrderService orders;
  @Autowired JdbcTemplate jdbc;
  @Autowired MeterRegistry registry;
  @Autowired ApplicationContext context;
  @Autowired TxboxService<LogicalRelay> relay;

  @BeforeAll
  static void startServerAndCreateTables() throws IOException {
    KafkaBroker.shared().createTopic(TOPIC, 3);
    server = EmbeddedPostgres.builder().setServerConfig("wal_level", "logical").start();
    JdbcTemplate jdbc = new JdbcTemplate(new SingleConnectionDataSource(jdbcUrl(), "postgres", "", true));
    jdbc.execute("CREATE SCHEMA " + SCHEMA);
    jdbc.execute("CREATE TABLE " + SCHEMA + ".orders (id text PRIMARY KEY)");
    jdbc.execute("CREATE TABLE " + SCHEMA + ".handled (order_id text, message_id uuid, trace_id text,"
        + " handled_order bigserial)");
  }

  @AfterAll
  static void stopServer() {
    try {
      server.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String jdbcUrl() {
    return server.getJdbcUrl("postgres", "postgres");
  }

  @DynamicPropertySource
  static void connections(DynamicPropertyRegistry properties) {
    properties.add("spring.datasource.url", StarterLogicalTest::jdbcUrl);
    properties.add("txbox.schema", () -> SCHEMA);
    properties.add("txbox.logical.slot", () -> SCHEMA);
    properties.add("txbox.logical.publication", () -> SCHEMA);
    properties.add("shop.schema", () -> SCHEMA);
    properties.add("shop.topic", () -> TOPIC);
    properties.add("txbox.kafka.bootstrap-servers", () -> KafkaBroker.shared().bootstrapServers());
  }

  @Test
  void anOrderWrittenAsAWalMessageIsStreamedToTheListener() throws Exception {
    orders.place("order-1");
    await().atMost(Duration.ofSeconds(30)).until(() -> handled("order-1") == 1);
    assertThat(count("txbox_outbox")).as("a WAL message, no row").isZero();
  }

  @Test
  void aRolledBackTransactionSendsNothing() throws Exception {
    assertThatThrownBy(() -> orders.placeAndFail("order-refused")).hasMessageContaining("payment refused");
    orders.place("order-after-refusal");
    await().atMost(Duration.ofSeconds(30)).until(() -> handled("order-after-refusal") == 1);
    assertThat(handled("order-refused")).isZero();
  }

  @Test
  void eventsOfOneKeyArriveInTheOrderTheirTransactionsCommitted() throws Exception {
    List<UUID> sent = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      Message m = Message.builder().type("OrderChanged").destination(TOPIC).key("ordered")
          .payload(("step-" + i).getBytes(StandardCharsets.UTF_8), "text/plain").build();
      orders.send(m);
      sent.add(m.id());
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> handled("ordered") == 20);
    assertThat(jdbc.queryForList("SELECT message_id FROM " + SCHEMA + ".handled WHERE order_id = 'ordered'"
        + " ORDER BY handled_order", UUID.class)).isEqualTo(sent);
  }

  @Test
  void healthAndMetersShowTheSlot() throws Exception {
    orders.place("order-watched");
    await().atMost(Duration.ofSeconds(30)).until(() -> handled("order-watched") == 1);
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      HealthView health = BootLine.health(context, "txbox");
      assertThat(health.isUp()).as("%s", health.details()).isTrue();
      assertThat(health.details()).containsEntry("slot", SCHEMA).containsEntry("slotState", "ok")
          .containsEntry("relay", "streaming").containsKeys("lagBytes", "retainedBytes");
    });
    assertThat(registry.get("txbox.slot.retained").tag("slot", SCHEMA).gauge().value()).isPositive();
    assertThat(registry.get("txbox.slot.active").tag("slot", SCHEMA).gauge().value()).isEqualTo(1.0);
    // The relay's own backlog, under its slot's name (the table's backlog has nothing to count),
    // tagged with the outbox as every txbox process tags it; and no buckets: a slot has none.
    assertThat(registry.find("txbox.outbox.pending").gauges()).singleElement().satisfies(g -> {
      assertThat(g.getId().getTag("subscription")).isEqualTo(SCHEMA);
      assertThat(g.getId().getTag("outbox")).endsWith("." + SCHEMA + ".txbox_outbox");
    });
    assertThat(registry.get("txbox.outbox.oldest.pending.age").tag("subscription", SCHEMA).timeGauge().value())
        .isNotNegative();
    assertThat(registry.find("txbox.relay.buckets.owned").gauges()).as("a slot has no buckets").isEmpty();
  }

  @Test
  void aDroppedSlotMakesTheApplicationDown() {
    relay.stop();
    try {
      jdbc.execute("SELECT pg_drop_replication_slot('" + SCHEMA + "')");
      HealthView health = BootLine.health(context, "txbox");
      assertThat(health.isUp()).isFalse();
      assertThat((String) health.details().get("slotState")).startsWith("missing: run txbox migrate --logical");
      assertThat(health.details()).containsEntry("relay", "stopped");
    } finally {
      jdbc.execute("SELECT pg_create_logical_replication_slot('" + SCHEMA + "', 'pgoutput')");
      relay.start();
    }
  }

  private int handled(String orderId) {
    return count("handled WHERE order_id = '" + orderId + "'");
  }

  private int count(String fromWhere) {
    return jdbc.queryForObject("SELECT count(*) FROM " + SCHEMA + "." + fromWhere, Integer.class);
  }
}
