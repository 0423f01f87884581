package io.txbox.kafka;

import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.InboxStore;
import io.txbox.spi.Publisher;
import io.txbox.spi.Subscriber;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.StoppableBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TransportContract;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

/** Kafka's publisher and subscriber held to the transport contract. */
class KafkaContractTest extends TransportContract {

  @Override
  protected String sharedBroker() {
    return KafkaBroker.shared().bootstrapServers();
  }

  @Override
  protected StoppableBroker startOwnBroker() {
    return KafkaBroker.start("512m");
  }

  @Override
  protected String createDestination(String broker, String name) throws Exception {
    try (Admin admin = Admin.create(Map.<String, Object>of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker))) {
      admin.createTopics(List.of(new NewTopic(name, 4, (short) 1))).all().get();
    }
    return name;
  }

  @Override
  protected Publisher publisher(String broker) {
    return KafkaPublisher.builder().bootstrapServers(broker)
        .property("delivery.timeout.ms", "6000")
        .property("request.timeout.ms", "2000")
        .property("max.block.ms", "3000")
        .build();
  }

  @Override
  protected Subscriber subscriber(String broker, String destination, Inbox inbox, String consumer, InboxHandler handler,
      RetryPolicy retryPolicy, WhenExhausted whenExhausted) {
    return KafkaSubscriber.builder(inbox, consumer, handler)
        .bootstrapServers(broker)
        .topics(destination)
        .property("session.timeout.ms", "6000") // a killed member leaves the group quickly
        .property("heartbeat.interval.ms", "1000")
        .retryPolicy(retryPolicy)
        .whenExhausted(whenExhausted)
        .build();
  }

  @Override
  protected int payloadLimit() {
    return 1_048_576; // max.request.size and the broker's message.max.bytes, by default
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
