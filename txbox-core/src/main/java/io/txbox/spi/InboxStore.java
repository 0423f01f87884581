package io.txbox.spi;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.UUID;

/**
 * Where a consumer records the ids of the messages it has processed, in the same transaction as
 * the processing itself.
 *
 * <pre>{@code
 * InboxStore store = PostgresInboxStore.builder(dataSource).build();
 * Inbox inbox = Inbox.create(dataSource, store);
 * }</pre>
 */
public interface InboxStore {

  /**
   * Records that {@code consumer} processes {@code messageId}, inside the caller's transaction.
   *
   * @return {@code true} when this is the first time; {@code false} when the consumer has
   *     recorded this message before, which makes it a duplicate
   */
  boolean record(Connection transaction, String consumer, UUID messageId) throws SQLException;
}
