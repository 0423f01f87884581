package io.txbox.nats;

import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.InboxStore;
import io.txbox.spi.Publisher;
import io.txbox.spi.Subscriber;
import io.txbox.testkit.NatsServer;
import io.txbox.testkit.StoppableBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TransportContract;
import java.time.Duration;

/**
 * NATS JetStream's publisher and subscriber held to the transport contract, against the machine's
 * NATS server and, for the outage, one of the test's own.
 */
class NatsContractTest extends TransportContract {

  @Override
  protected String sharedBroker() {
    return NatsServer.MACHINE_URL;
  }

  @Override
  protected StoppableBroker startOwnBroker() {
    return NatsServer.start();
  }

  /** A file-backed stream named after the subject, which is the destination. */
  @Override
  protected String createDestination(String broker, String name) throws Exception {
    try (Connection c = Nats.connect(broker)) {
      c.jetStreamManagement().addStream(StreamConfiguration.builder()
          .name(stream(name)).subjects(name).storageType(StorageType.File).build());
    }
    return name;
  }

  private static String stream(String subject) {
    return "S_" + subject;
  }

  @Override
  protected Publisher publisher(String broker) {
    return NatsPublisher.builder().servers(broker).ackTimeout(Duration.ofSeconds(3)).build();
  }

  @Override
  protected Subscriber subscriber(String broker, String destination, Inbox inbox, String consumer, InboxHandler handler,
      RetryPolicy retryPolicy, WhenExhausted whenExhausted) {
    return NatsSubscriber.builder(inbox, consumer, handler)
        .servers(broker)
        .stream(stream(destination))
        .ackWait(Duration.ofSeconds(2)) // a crashed subscriber's message comes back quickly
        .retryPolicy(retryPolicy)
        .whenExhausted(whenExhausted)
        .build();
  }

  @Override
  protected int payloadLimit() {
    return 1_048_576; // the server's max_payload, by default, headers included
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
