package io.txbox.cdc;

import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.TestDatabase;
import java.time.Duration;
import java.util.Properties;

/**
 * A logical relay in a process of its own, for tests that SIGKILL it: jdbc-url schema
 * bootstrap-servers [batch-size]. Its status interval is the default when a batch size is given.
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
    LogicalRelay.Builder relay = LogicalRelay.builder(replication, KafkaPublisher.builder().bootstrapServers(args[2]).build())
        .connection(url, credentials)
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
