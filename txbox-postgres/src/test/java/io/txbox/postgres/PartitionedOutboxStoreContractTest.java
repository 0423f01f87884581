package io.txbox.postgres;

/** The store contract on an outbox partitioned by position range: the relay reads across partitions. */
class PartitionedOutboxStoreContractTest extends PostgresOutboxStoreContractTest {

  @Override
  PostgresOutboxStore.Builder configure(PostgresOutboxStore.Builder builder) {
    return builder.outboxPartitionSize(PostgresOutboxStore.MIN_PARTITION_SIZE);
  }
}
