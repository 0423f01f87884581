package io.txbox.jdbc;

import io.txbox.spi.JanitorStore;
import io.txbox.spi.OutboxStore;

/**
 * A table outbox whole: the writers' and relays' part ({@link OutboxStore}), the janitor's
 * ({@link JanitorStore}) and the operators' ({@link OperatorStore}). Each database's store is one;
 * {@link Database#outboxStore} builds it for a front end that names no database.
 *
 * <pre>{@code
 * JdbcOutboxStore store = Database.forUrl(url).orElseThrow()
 *     .outboxStore(dataSource, Database.OutboxSettings.of(new Database.Tables("public", "txbox_"), 64));
 * store.migrate();
 * Relay relay = Relay.builder(store, publisher).build().start();
 * }</pre>
 */
public interface JdbcOutboxStore extends OutboxStore, JanitorStore, OperatorStore {}
