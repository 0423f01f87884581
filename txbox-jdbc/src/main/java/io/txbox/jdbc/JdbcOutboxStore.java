package io.txbox.jdbc;

import io.txbox.spi.JanitorStore;
import io.txbox.spi.OutboxStore;

/**
 * A table outbox whole: the writers' and relays' part ({@link OutboxStore}), the janitor's
 * ({@link JanitorStore}) and the operators' ({@link OperatorStore}). Each database module's store
 * is one, built by its builder; a front end that names no database has it built by the URL's
 * {@link io.txbox.jdbc.spi.Database}.
 *
 * <pre>{@code
 * JdbcOutboxStore store = PostgresOutboxStore.builder(dataSource).schema("shop").build();
 * store.migrate();
 * Relay relay = Relay.builder(store, publisher).build().start();
 * }</pre>
 */
public interface JdbcOutboxStore extends OutboxStore, JanitorStore, OperatorStore {}
