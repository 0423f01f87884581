package io.txbox.spring;

import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.txbox.testkit.NatsServer;
import io.txbox.testkit.TestDatabase;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The starter relaying to the machine's NATS JetStream and listening on a durable consumer. */
@SpringBootTest(classes = ShopApplication.class, properties = {
    "txbox.broker=nats", "txbox.relay.idle-interval=50ms", "txbox.nats.servers=" + NatsServer.MACHINE_URL})
@Import(NatsListenerTest.DropSchemaOnClose.class)
class NatsListenerTest extends BrokerListenerTest {
  private static final String SUBJECT = "shop.orders." + UUID.randomUUID().toString().replace("-", "");
  private static final String STREAM = "SHOP_" + SUBJECT.replace('.', '_');
  private static TestDatabase db;

  @BeforeAll
  static void createStream() throws Exception {
    try (Connection c = Nats.connect(NatsServer.MACHINE_URL)) {
      c.jetStreamManagement().addStream(StreamConfiguration.builder()
          .name(STREAM).subjects(SUBJECT).storageType(StorageType.File).build());
    }
    db = shopDatabase();
  }

  @DynamicPropertySource
  static void connections(DynamicPropertyRegistry properties) {
    ShopProperties.register(properties, () -> db, SUBJECT);
    properties.add("shop.source", () -> STREAM);
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
