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
 * @param pid the server process id of the session that holds it (what {@code pg_terminate_backend} takes)
 * @param age how long it has been open, never negative
 * @param user the database user of the session
 * @param database the database it is connected to
 * @param application the session's application name, empty when it set none
 * @param state the session's state, such as {@code idle in transaction}
 * @param query the start of its last query: it may hold literal values, so show it to operators
 *     only, never in logs
 */
public record OpenTransaction(int pid, Duration age, String user, String database, String application,
    String state, String query) {

  /** Who holds it and in which state, without the query text: what a log line or any viewer may see. */
  public String description() {
    return user + "@" + database + (application.isEmpty() ? "" : " (" + application + ")") + ", " + state;
  }
}
