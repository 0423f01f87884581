package io.txbox.postgres.internal;

import io.txbox.jdbc.spi.Transactions;
import io.txbox.postgres.PostgresTables;
import io.txbox.spi.JanitorStore;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;

/**
 * The janitor's part of the PostgreSQL outbox: deletes of relayed events and old inbox records,
 * one janitor at a time, and the outbox's partitions. {@link io.txbox.postgres.PostgresOutboxStore}
 * hands its {@link JanitorStore} calls here.
 */
public final class PostgresJanitorStore implements JanitorStore {
  private final PostgresTables tables;
  private final PostgresSql sql;
  private final Transactions tx;
  private final OutboxPartitions partitions;
  private final String deleteRelayedFromDefault;
  private final JanitorLock janitorLock;
  private volatile boolean partitioned;

  public PostgresJanitorStore(PostgresTables tables, Transactions tx, int partitionsAhead, Duration partitionLockTimeout) {
    this.tables = tables;
    this.sql = PostgresSql.of(tables);
    this.tx = tx;
    this.partitions = new OutboxPartitions(tables, tx, partitionsAhead, partitionLockTimeout);
    this.deleteRelayedFromDefault = PostgresSql.deleteRelayedFrom(tables, partitions.defaultPartition());
    this.janitorLock = new JanitorLock(tables, tx);
  }

  /**
   * {@inheritDoc}
   *
   * <p>On a partitioned outbox, also creates partitions ahead of the writers and drops whole
   * partitions that may go; their rows count in the result, which may then exceed {@code limit}.
   */
  @Override
  public OptionalInt deleteRelayed(Duration retention, int limit) {
    if (isPartitioned()) {
      return partitions.clean(retention, limit, deleteRelayedFromDefault);
    }
    return underJanitorLock("deleting relayed outbox events", sql.deleteRelayed(), p -> {
      p.setLong(1, retention.toMillis());
      p.setInt(2, limit);
      p.setInt(3, limit);
    });
  }

  /** Whether the outbox is partitioned; once it is, it stays so. */
  private boolean isPartitioned() {
    if (!partitioned) {
      partitioned = tx.inTransaction("reading the outbox's layout", c -> OutboxPartitions.isPartitioned(c, tables));
    }
    return partitioned;
  }

  /** The outbox's partitions, oldest first and the default partition last; empty for a plain table. */
  public List<String> outboxPartitions() {
    return isPartitioned() ? partitions.names() : List.of();
  }

  @Override
  public OptionalInt deleteInboxRecords(Duration retention, int limit) {
    return underJanitorLock("deleting old inbox records", sql.deleteInboxRecords(), p -> {
      p.setLong(1, retention.toMillis());
      p.setInt(2, limit);
    });
  }

  /** Parameters of a statement. */
  @FunctionalInterface
  private interface Binder {
    void bind(PreparedStatement statement) throws SQLException;
  }

  /** Runs one delete in its own transaction, or nothing when another janitor holds the lock. */
  private OptionalInt underJanitorLock(String what, String delete, Binder binder) {
    return janitorLock.run(what, c -> {
      try (PreparedStatement p = c.prepareStatement(delete)) {
        binder.bind(p);
        return p.executeUpdate();
      }
    });
  }
}
