package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.baggage.propagation.W3CBaggagePropagator;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.ParkedMessage;
import io.txbox.Relay;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.spring.TxboxService;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
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
@Import(StarterKafkaTest.TestBeans.class)
@DirtiesContext
class StarterKafkaTest {
  private static final String TOPIC = "shop-orders-" + UUID.randomUUID();
  private static TestDatabase db;

  @Autowired ShopApplication.OrderService orders;
  @Autowired JdbcTemplate jdbc;
  @Autowired Outbox outbox;
  @Autowired MeterRegistry registry;
  @Autowired ApplicationContext context;
  @Autowired TxboxService<Relay> relay;
  @Autowired OpenTelemetry openTelemetry;
  @Autowired InMemorySpanExporter spans;

  @BeforeAll
  static void createTopicAndTables() {
    KafkaBroker.shared().createTopic(TOPIC, 3);
    db = TestDatabase.create();
    JdbcTemplate jdbc = new JdbcTemplate(db.dataSource());
    jdbc.execute("CREATE TABLE " + db.schema() + ".orders (id text PRIMARY KEY)");
    jdbc.execute("CREATE TABLE " + db.schema() + ".handled (order_id text, message_id uuid, trace_id text)");
  }

  /** The test's own beans: an OpenTelemetry SDK that keeps its spans, and the schema's drop. */
  @TestConfiguration
  static class TestBeans {
    @Bean
    InMemorySpanExporter spans() {
      return InMemorySpanExporter.create();
    }

    @Bean
    OpenTelemetry openTelemetry(InMemorySpanExporter spans) {
      return OpenTelemetrySdk.builder()
          .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
          .setPropagators(ContextPropagators.create(TextMapPropagator.composite(
              W3CTraceContextPropagator.getInstance(), W3CBaggagePropagator.getInstance())))
          .build();
    }

    /** Drops the schema when the context closes, after the relay and listeners stopped. */
    @Bean(destroyMethod = "close")
    TestDatabase shopDatabase() {
      return db;
    }
  }

  @DynamicPropertySource
  static void connections(DynamicPropertyRegistry properties) {
    ShopProperties.register(properties, () -> db, TOPIC);
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
  void aFailingHandlersWritesRollBackWithItsInboxRecordAndItsRetriesAreCounted() throws Exception {
    double failures = counter("txbox.inbox.failures");
    orders.place("flaky");
    await().atMost(Duration.ofSeconds(30)).until(() -> ShopApplication.FLAKY_FAILURES.get() >= 3);
    await().atMost(Duration.ofSeconds(30)).until(() -> handled("flaky") == 1);
    assertThat(counter("txbox.inbox.failures") - failures).isEqualTo(2);
  }

  @Test
  void aPoisonMessageIsDeadLetteredItsKeyParkedAndTheListenerGoesOn() throws Exception {
    double deadLetters = counter("txbox.inbox.dead.letters");
    Message poison = Message.builder().type("OrderPlaced").destination(TOPIC).key("poison-order")
        .payload(ShopApplication.REFUSED.getBytes(StandardCharsets.UTF_8)).build();
    Message behind = Message.builder().type("OrderPlaced").destination(TOPIC).key("poison-order")
        .payload("fine".getBytes(StandardCharsets.UTF_8)).build();
    orders.send(poison);
    orders.send(behind);
    orders.place("after-poison");

    await().atMost(Duration.ofSeconds(30)).until(() -> handled("after-poison") == 1);
    await().atMost(Duration.ofSeconds(30)).until(() -> counter("txbox.inbox.dead.letters") - deadLetters == 1);
    Inbox inbox = Inbox.create(jdbc.getDataSource(), PostgresInboxStore.builder().schema(db.schema()).build());
    await().atMost(Duration.ofSeconds(30)).until(() -> inbox.parked("inventory", 10).size() == 2);
    List<ParkedMessage> parked = inbox.parked("inventory", 10);
    assertThat(parked).extracting(p -> p.message().id()).containsExactly(poison.id(), behind.id());
    assertThat(parked.get(0).lastError()).isEqualTo("java.lang.IllegalArgumentException: no such product");
    assertThat(parked.get(0).attempts()).as("permanent: one attempt").isEqualTo(1);
    assertThat(handled("poison-order")).as("the failed attempt's insert rolled back").isZero();

    // an operator asks for a retry before the product exists: the running listener takes the
    // request, its handler refuses the message again, and the key stays parked with two attempts
    assertThat(inbox.requestRetry("inventory", "poison-order", "alice")).isTrue();
    await().atMost(Duration.ofSeconds(30)).until(() -> inbox.parked("inventory", 10).get(0).attempts() == 2);
    assertThat(inbox.parked("inventory", 10)).hasSize(2);
    assertThat(handled("poison-order")).isZero();
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
    await().atMost(Duration.ofSeconds(30)).until(() -> BootLine.health(context, "txbox").isUp());
    relay.stop();
    try {
      orders.send(Message.builder().type("Late").destination(TOPIC).key("late")
          .createdAt(Instant.now().minus(Duration.ofHours(1))).payload(new byte[0]).build());
      HealthView down = BootLine.health(context, "txbox");
      assertThat(down.status()).isEqualTo("DOWN");
      assertThat(down.details()).containsEntry("relay", "stopped").containsEntry("pending", 1L);
      assertThat((String) down.details().get("oldestPendingAge")).startsWith("PT1H");
    } finally {
      relay.start();
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> BootLine.health(context, "txbox").isUp());
    await().atMost(Duration.ofSeconds(30)).until(() -> handled("late") == 1);
    assertThat(BootLine.health(context, "txbox").details()).containsEntry("troubled", List.of());
    assertThat(registry.get("txbox.loops.troubled").gauge().value()).isZero();
    assertThat(registry.get("txbox.janitor.failures").functionCounter().count()).isZero();
    assertThat(registry.get("txbox.janitor.deleted").tag("table", "outbox").functionCounter()).isNotNull();
  }

  @Test
  void theTraceOfTheWritingTransactionIsSeenByTheHandlerThroughThePublishSpan() throws Exception {
    Span write = openTelemetry.getTracer("test").spanBuilder("place order").startSpan();
    try (Scope ignored = write.makeCurrent()) {
      orders.place("order-traced");
    } finally {
      write.end();
    }
    String traceId = write.getSpanContext().getTraceId();
    await().atMost(Duration.ofSeconds(30)).until(() -> handled("order-traced") == 1);

    assertThat(jdbc.queryForObject("SELECT trace_id FROM " + db.schema() + ".handled WHERE order_id = 'order-traced'",
        String.class)).isEqualTo(traceId);
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      List<SpanData> trace = spans.getFinishedSpanItems().stream()
          .filter(s -> s.getTraceId().equals(traceId)).toList();
      SpanData publish = trace.stream().filter(s -> s.getKind() == SpanKind.PRODUCER).findFirst().orElseThrow();
      SpanData process = trace.stream().filter(s -> s.getKind() == SpanKind.CONSUMER).findFirst().orElseThrow();
      assertThat(publish.getParentSpanId()).isEqualTo(write.getSpanContext().getSpanId());
      assertThat(publish.getName()).isEqualTo(TOPIC + " publish");
      assertThat(process.getParentSpanId()).isEqualTo(publish.getSpanId());
      assertThat(process.getAttributes().asMap().toString()).contains("messaging.consumer.group.name=inventory");
    });
  }

  @Test
  void anEventWrittenOutsideATraceGetsNoTraceHeaders() throws Exception {
    orders.place("order-untraced");
    await().atMost(Duration.ofSeconds(30)).until(() -> handled("order-untraced") == 1);
    assertThat(jdbc.queryForObject("SELECT headers::text FROM " + db.schema() + ".txbox_outbox WHERE key = 'order-untraced'",
        String.class)).doesNotContain("traceparent");
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
