package io.txbox.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Publisher;
import io.txbox.testkit.ElasticMqServer;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * The subscriber's defaults, not the short waits the contract test uses, against ElasticMQ: its
 * HTTP server gives up on a request after 20 s, so a long poll of SQS's longest wait is answered
 * with 503.
 */
class SqsDefaultsTest {
  @Test
  void anIdleSubscriberWithTheDefaultsLongPollsWithoutErrorsTakesTheNextMessageAtOnceAndStopsWithinAPoll() throws Exception {
    String broker = ElasticMqServer.shared().address();
    String queue = "defaults-" + UUID.randomUUID() + ".fifo";
    try (var sqs = new io.txbox.sqs.internal.ClientSettings(broker, SqsContractTest.REGION, SqsContractTest.KEY,
        SqsContractTest.KEY).build(Duration.ofSeconds(10))) {
      sqs.createQueue(r -> r.queueName(queue).attributes(Map.of(
          QueueAttributeName.FIFO_QUEUE, "true", QueueAttributeName.CONTENT_BASED_DEDUPLICATION, "false")));
    }
    try (TestDatabase db = TestDatabase.create()) {
      PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build().migrate();
      Inbox inbox = Inbox.create(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build());
      AtomicInteger handled = new AtomicInteger();
      SqsSubscriber subscriber = SqsSubscriber.builder(inbox, "defaults", (tx, message, key) -> handled.incrementAndGet())
          .endpoint(broker).region(SqsContractTest.REGION).credentials(SqsContractTest.KEY, SqsContractTest.KEY)
          .queue(queue)
          .build()
          .start();
      try {
        // untroubled through one whole long poll, and into the next
        Duration poll = SqsSubscriber.DEFAULT_WAIT_TIME.plusSeconds(3);
        await().during(poll).atMost(poll.plusSeconds(5)).until(() -> !subscriber.isTroubled());
        try (Publisher publisher = SqsPublisher.builder().endpoint(broker).region(SqsContractTest.REGION)
            .credentials(SqsContractTest.KEY, SqsContractTest.KEY).build()) {
          assertThat(publisher.publish(List.of(Message.builder().destination(queue).key("k").type("T")
              .payload("{}".getBytes(StandardCharsets.UTF_8)).build())).acknowledged()).isEqualTo(1);
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> handled.get() == 1);
      } finally {
        // A stop waits for the receives under way; with 20 s polls, ElasticMQ's 503s and the SDK's
        // retries of them made it 50 s.
        long start = System.nanoTime();
        subscriber.close();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(SqsSubscriber.DEFAULT_WAIT_TIME.plusSeconds(5));
      }
    }
  }
}
