package io.txbox.spi;

/**
 * Where the outbox log, the subscriptions' checkpoints and leases, and the dead letters live: the
 * writer's half ({@link OutboxWriter#append}, in the caller's transaction) and the relay's
 * ({@link RelayStore}) over the same table, which a polling {@link io.txbox.Relay} reads.
 *
 * <pre>{@code
 * OutboxStore store = PostgresOutboxStore.builder(dataSource).build().relay();
 * Outbox outbox = Outbox.create(store);
 * Relay relay = Relay.builder(store, publisher).build().start();
 * }</pre>
 */
public interface OutboxStore extends OutboxWriter, RelayStore {}
