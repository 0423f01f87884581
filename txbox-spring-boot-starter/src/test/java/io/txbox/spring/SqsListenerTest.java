package io.txbox.spring;

import io.txbox.testkit.ElasticMqServer;
import io.txbox.testkit.TestDatabase;
import java.net.URI;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/** The starter relaying to a FIFO queue of ElasticMQ (an SQS-compatible server) and listening on it. */
@SpringBootTest(classes = ShopApplication.class, properties = {
    "txbox.broker=sqs", "txbox.relay.idle-interval=50ms", "txbox.sqs.region=us-east-1",
    "txbox.sqs.access-key-id=test", "txbox.sqs.secret-access-key=test", "txbox.sqs.wait-time=1s"})
@Import(SqsListenerTest.DropSchemaOnClose.class)
class SqsListenerTest extends BrokerListenerTest {
  private static final String QUEUE = "shop-orders-" + UUID.randomUUID().toString().substring(0, 8) + ".fifo";
  private static TestDatabase db;

  @BeforeAll
  static void createQueue() {
    try (SqsClient sqs = SqsClient.builder().endpointOverride(URI.create(ElasticMqServer.shared().address()))
        .region(Region.US_EAST_1).httpClient(UrlConnectionHttpClient.create())
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("test", "test"))).build()) {
      sqs.createQueue(r -> r.queueName(QUEUE).attributes(Map.of(QueueAttributeName.FIFO_QUEUE, "true")));
    }
    db = shopDatabase();
  }

  @DynamicPropertySource
  static void connections(DynamicPropertyRegistry properties) {
    ShopProperties.register(properties, () -> db, QUEUE);
    properties.add("shop.source", () -> QUEUE);
    properties.add("txbox.sqs.endpoint", () -> ElasticMqServer.shared().address());
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
