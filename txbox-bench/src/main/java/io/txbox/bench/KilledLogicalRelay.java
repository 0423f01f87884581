package io.txbox.bench;

import io.txbox.cdc.LogicalRelay;
import io.txbox.cdc.LogicalReplication;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.testkit.TestDatabase;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

/**
 * The logical relay that {@code txbox-bench debezium} kills with SIGKILL: runs in a child JVM
 * with default settings until then. Arguments: JDBC URL, schema, table prefix, slot (and
 * publication), bootstrap servers.
 */
public final class KilledLogicalRelay {
  private KilledLogicalRelay() {}

  public static void main(String[] args) throws Exception {
    var pool = TestDatabase.pool(args[0], 2);
    PostgresOutboxStore store = PostgresOutboxStore.builder(pool).schema(args[1]).tablePrefix(args[2]).build();
    LogicalReplication replication = LogicalReplication.builder(pool, store).slot(args[3]).publication(args[3]).build();
    LogicalRelay.builder(replication, KafkaPublisher.builder().bootstrapServers(args[4]).build())
        .connection(args[0], new Properties()).build().start();
    new CountDownLatch(1).await(); // until the benchmark kills this JVM
  }
}
