package io.txbox.sqs;

import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.InboxStore;
import io.txbox.spi.Publisher;
import io.txbox.spi.Subscriber;
import io.txbox.testkit.ElasticMqServer;
import io.txbox.testkit.StoppableBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TransportContract;
import java.time.Duration;
import java.util.Map;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * SQS's publisher and subscriber held to the transport contract, against ElasticMQ (an
 * SQS-compatible server from Maven Central) in a child JVM: a shared one, and for the outage one
 * of the test's own. Destinations are FIFO queues, the kind that keeps each key's order.
 */
class SqsContractTest extends TransportContract {
  static final String REGION = "us-east-1";
  static final String KEY = "test";

  @Override
  protected String sharedBroker() {
    return ElasticMqServer.shared().address();
  }

  @Override
  protected StoppableBroker startOwnBroker() {
    return ElasticMqServer.start();
  }

  /** A FIFO queue, deduplicating by the id txbox sends, not by content. */
  @Override
  protected String createDestination(String broker, String name) {
    String queue = name + ".fifo";
    try (var sqs = new io.txbox.sqs.internal.ClientSettings(broker, REGION, KEY, KEY).build(Duration.ofSeconds(10))) {
      sqs.createQueue(r -> r.queueName(queue).attributes(Map.of(
          QueueAttributeName.FIFO_QUEUE, "true", QueueAttributeName.CONTENT_BASED_DEDUPLICATION, "false")));
    }
    return queue;
  }

  @Override
  protected Publisher publisher(String broker) {
    return SqsPublisher.builder().endpoint(broker).region(REGION).credentials(KEY, KEY)
        .sendTimeout(Duration.ofSeconds(3)).build();
  }

  @Override
  protected Subscriber subscriber(String broker, String destination, Inbox inbox, String consumer, InboxHandler handler,
      RetryPolicy retryPolicy, WhenExhausted whenExhausted) {
    return SqsSubscriber.builder(inbox, consumer, handler)
        .endpoint(broker).region(REGION).credentials(KEY, KEY)
        .queue(destination)
        .visibilityTimeout(Duration.ofSeconds(5))
        .waitTime(Duration.ofSeconds(1))
        .retryPolicy(retryPolicy)
        .whenExhausted(whenExhausted)
        .build();
  }

  @Override
  protected int payloadLimit() {
    return SqsPublisher.maxPayloadSize(SqsPublisher.DEFAULT_MAX_MESSAGE_SIZE);
  }

  @Override
  protected void migrate(TestDatabase db) {
    PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build().migrate();
  }

  @Override
  protected InboxStore inboxStore(String schema) {
    return PostgresInboxStore.builder().schema(schema).build();
  }
}
