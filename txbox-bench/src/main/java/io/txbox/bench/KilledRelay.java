package io.txbox.bench;

import io.txbox.Relay;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.TestDatabase;
import java.util.concurrent.CountDownLatch;

/**
 * The relay that {@code txbox-bench resends} kills with SIGKILL: runs in a child JVM until then.
 * Arguments: JDBC URL, schema, table prefix, bootstrap servers, batch size.
 */
public final class KilledRelay {
  private KilledRelay() {}

  public static void main(String[] args) throws Exception {
    PostgresOutboxStore store = PostgresOutboxStore.builder(TestDatabase.pool(args[0], 4))
        .schema(args[1]).tablePrefix(args[2]).build();
    Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(args[3]).build())
        .instanceId("killed").batchSize(Integer.parseInt(args[4])).build().start();
    new CountDownLatch(1).await(); // until the benchmark kills this JVM
  }
}
