package io.txbox.kafka;

import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;

/**
 * A subscriber in its own JVM, for tests that kill it: args are bootstrap servers, topic, schema
 * and consumer. Its handler writes a side-effect row, and hangs forever on a message whose payload
 * ends in ":hang", so that the messages before it in the same poll are processed and committed in
 * the database while their offsets are not yet committed to Kafka.
 */
public final class SubscriberProcess {
  private SubscriberProcess() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    String schema = args[2];
    String consumer = args[3];
    var dataSource = TestDatabase.pool(TestDatabase.jdbcUrl(), 4);
    Inbox inbox = Inbox.create(dataSource, PostgresInboxStore.builder().schema(schema).build());
    InboxHandler handler = (tx, message, key) -> {
      if (new String(message.payload(), StandardCharsets.UTF_8).endsWith(":hang")) {
        Thread.sleep(Long.MAX_VALUE);
      }
      try (PreparedStatement p = tx.prepareStatement(
          "INSERT INTO " + schema + ".side_effect (consumer, message_id) VALUES (?, ?)")) {
        p.setString(1, consumer);
        p.setObject(2, message.id());
        p.executeUpdate();
      }
    };
    KafkaSubscriber.builder(inbox, consumer, handler).bootstrapServers(bootstrap).topics(topic)
        .property("session.timeout.ms", "6000") // a killed member leaves the group quickly
        .property("heartbeat.interval.ms", "1000")
        .batchSize(2) // the first two commit as one batch; the third, alone, hangs before the offsets commit
        .build().start();
    Thread.currentThread().join();
  }
}
