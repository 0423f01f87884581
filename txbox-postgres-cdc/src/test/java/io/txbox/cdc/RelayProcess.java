package io.txbox.cdc;

import io.txbox.Delivery;
import io.txbox.kafka.KafkaExactlyOncePublisher;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Publisher;
import io.txbox.testkit.TestDatabase;
import java.time.Duration;
import java.util.Properties;

/**
 * A logical relay in a process of its own, for tests that SIGKILL it: jdbc-url schema
 * bootstrap-servers [batch-size [delivery]]. Its status interval is the default when a batch size
 * is given; with delivery {@code exactly-once} it publishes through a {@link KafkaExactlyOncePublisher}.
 */
public final class RelayProcess {
  private RelayProcess() {}

  public static void main(String[] args) throws Exception {
    String url = args[0];
    String schema = args[1];
    var pool = TestDatabase.pool(url, 2);
    PostgresOutboxStore store = PostgresOutboxStore.builder(pool).schema(schema).build();
    LogicalReplication replication = LogicalReplication.builder(pool, store).slot(schema).publication(schema).build();
    Properties credentials = new Properties();
    credentials.setProperty("user", "postgres");
    Delivery delivery = args.length > 4 ? Delivery.parse(args[4]) : Delivery.AT_LEAST_ONCE;
    Publisher publisher = delivery == Delivery.EXACTLY_ONCE
        ? KafkaExactlyOncePublisher.builder().bootstrapServers(args[2]).build()
        : KafkaPublisher.builder().bootstrapServers(args[2]).build();
    LogicalRelay.Builder relay = LogicalRelay.builder(replication, publisher)
        .connection(url, credentials)
        .delivery(delivery)
        .standbyInterval(Duration.ofMillis(100));
    if (args.length > 3) {
      relay.batchSize(Integer.parseInt(args[3]));
    } else {
      relay.statusInterval(Duration.ofMillis(200));
    }
    relay.build().start();
    Thread.currentThread().join(); // until killed
  }
}
