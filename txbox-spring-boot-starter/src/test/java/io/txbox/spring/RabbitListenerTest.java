package io.txbox.spring;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.txbox.testkit.RabbitServer;
import io.txbox.testkit.TestDatabase;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The starter relaying to the machine's RabbitMQ and listening on a queue. */
@SpringBootTest(classes = ShopApplication.class, properties = {
    "txbox.broker=rabbitmq", "txbox.relay.idle-interval=50ms", "txbox.rabbitmq.uri=" + RabbitServer.MACHINE_URI})
@Import(RabbitListenerTest.DropSchemaOnClose.class)
class RabbitListenerTest extends BrokerListenerTest {
  private static final String EXCHANGE = "shop-orders-" + UUID.randomUUID();
  private static TestDatabase db;

  @BeforeAll
  static void createExchangeAndQueue() throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(RabbitServer.MACHINE_URI);
    try (Connection c = factory.newConnection(); Channel ch = c.createChannel()) {
      ch.exchangeDeclare(EXCHANGE, BuiltinExchangeType.FANOUT, true);
      ch.queueDeclare(EXCHANGE, true, false, false, Map.of("x-single-active-consumer", true));
      ch.queueBind(EXCHANGE, EXCHANGE, "");
    }
    db = shopDatabase();
  }

  @DynamicPropertySource
  static void connections(DynamicPropertyRegistry properties) {
    ShopProperties.register(properties, () -> db, EXCHANGE);
    properties.add("shop.source", () -> EXCHANGE);
  }

  @Override
  TestDatabase db() {
    return db;
  }

  @TestConfiguration
  static class DropSchemaOnClose {
    @Bean(destroyMethod = "close")
    TestDatabase shopDatabase() {
      return db;
    }
  }
}
