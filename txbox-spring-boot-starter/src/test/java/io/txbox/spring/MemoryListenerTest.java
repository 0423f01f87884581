package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.testkit.MemoryTransport;
import io.txbox.testkit.TestDatabase;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The starter with a broker it was never told of: {@link MemoryTransport}, registered by this
 * module's test resources as a fifth broker module would register itself, is found by
 * {@code txbox.broker=memory} and reads its settings from {@code txbox.memory.*}, relaxed names too.
 */
@SpringBootTest(classes = ShopApplication.class, properties = {
    "txbox.broker=memory", "txbox.relay.idle-interval=50ms", "txbox.memory.maxMessageSize=100000",
    "txbox.memory.client.linger.ms=5"})
@Import(MemoryListenerTest.DropSchemaOnClose.class)
class MemoryListenerTest extends BrokerListenerTest {
  private static final String SPACE = "shop-" + UUID.randomUUID();
  private static TestDatabase db;

  @BeforeAll
  static void createDatabase() {
    db = shopDatabase();
  }

  @DynamicPropertySource
  static void connections(DynamicPropertyRegistry properties) {
    ShopProperties.register(properties, () -> db, "shop.orders");
    properties.add("shop.source", () -> "shop.orders");
    properties.add("txbox.memory.space", () -> SPACE);
  }

  @Override
  TestDatabase db() {
    return db;
  }

  @Test
  void theRelayPublishesIntoTheSpaceItWasGiven() throws Exception {
    orders.place("order-in-space");

    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(MemoryTransport.published(SPACE))
        .extracting(Message::destination).contains("shop.orders"));
    assertThat(MemoryTransport.clientProperties(SPACE)).isEqualTo(Map.of("linger.ms", "5"));
  }

  @TestConfiguration
  static class DropSchemaOnClose {
    @Bean(destroyMethod = "close")
    TestDatabase shopDatabase() {
      return db;
    }
  }
}
