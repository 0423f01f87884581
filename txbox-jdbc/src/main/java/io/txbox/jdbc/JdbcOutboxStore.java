package io.txbox.jdbc;

import io.txbox.spi.JanitorStore;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.OutboxWriter;

/**
 * A table outbox, handed out in the parts its users need: the writers' ({@link #writer()}), the
 * relays' ({@link #relay()}), the janitor's ({@link #janitor()}) and the operators'
 * ({@link #operator()}). Each database module's store is one, built by its builder; a front end
 * that names no database has it built by the URL's {@link io.txbox.jdbc.spi.Database}.
 *
 * <pre>{@code
 * PostgresOutboxStore store = PostgresOutboxStore.builder(dataSource).schema("shop").build();
 * store.migrate();
 * Outbox outbox = Outbox.create(store.writer());
 * Relay relay = Relay.builder(store.relay(), publisher).build().start();
 * Janitor janitor = Janitor.builder(store.janitor()).build().start();
 * StoreStatus status = store.operator().status(10_000);
 * }</pre>
 *
 * <p>The parts share one set of tables and settings, so two parts of one store always agree on
 * names.
 */
public interface JdbcOutboxStore {

  /**
   * What writers use: {@code append}, in the caller's transaction. The relay part, which appends
   * to the log it reads, unless a store writes elsewhere.
   */
  default OutboxWriter writer() {
    return relay();
  }

  /** What a polling relay and the backlog meters use: the log, its leases, reads and checkpoints. */
  OutboxStore relay();

  /** What the {@link io.txbox.Janitor} uses: bounded deletes of what no one needs. */
  JanitorStore janitor();

  /** What operators' tools use: status, dead letters, replay, migration scripts. */
  OperatorStore operator();

  /**
   * Creates or upgrades the tables, as {@link OperatorStore#migrate()}; here too because every
   * application runs it once at start-up. Safe to run twice and from several instances at once.
   *
   * @return how many versioned scripts ran
   */
  default int migrate() {
    return operator().migrate();
  }
}
