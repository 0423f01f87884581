package io.txbox.spi;

import io.txbox.Message;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;

/**
 * The writer's half of an outbox store: where {@link io.txbox.Outbox} appends events, inside the
 * caller's transaction. A store that a polling relay reads is an {@link OutboxStore}, both
 * halves; one whose events only another relay reads (the WAL messages a logical relay streams)
 * is a writer alone.
 *
 * <pre>{@code
 * OutboxWriter writer = WalOutboxStore.create();
 * Outbox outbox = Outbox.create(writer);
 * }</pre>
 */
@FunctionalInterface
public interface OutboxWriter {

  /** Adds the messages to the log in the caller's transaction; never commits. */
  void append(Connection transaction, List<Message> messages) throws SQLException;
}
