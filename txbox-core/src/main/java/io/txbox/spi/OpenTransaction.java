package io.txbox.spi;

import java.time.Duration;

/**
 * The oldest transaction still open in the database. While it is open, the relay cannot read
 * events committed after it began, so a long one stalls delivery.
 *
 * <pre>{@code
 * store.oldestOpenTransaction().ifPresent(tx -> log.warn("pid {} open for {}", tx.pid(), tx.age()));
 * }</pre>
 *
 * @param pid the server process id of the session that holds it
 * @param age how long it has been open
 * @param description what the database says of it (user, application, state, query)
 */
public record OpenTransaction(int pid, Duration age, String description) {}
