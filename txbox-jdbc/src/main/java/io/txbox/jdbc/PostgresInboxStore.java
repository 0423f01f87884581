package io.txbox.jdbc;

import io.txbox.jdbc.internal.PostgresTables;
import io.txbox.spi.InboxStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.UUID;

/**
 * The inbox on PostgreSQL: table {@code <schema>.<prefix>inbox}, created by the same migration as
 * the outbox ({@link PostgresOutboxStore#migrate()} or {@code txbox migrate}).
 *
 * <pre>{@code
 * PostgresInboxStore store = PostgresInboxStore.builder().schema("public").tablePrefix("txbox_").build();
 * Inbox inbox = Inbox.create(dataSource, store);
 * }</pre>
 *
 * <p>Recording is one {@code INSERT ... ON CONFLICT DO NOTHING} on the primary key
 * {@code (consumer, message_id)}: a conflict means a duplicate. A concurrent delivery of the same
 * message to the same consumer waits on the first one's row lock, then sees the conflict once the
 * first commits, or records the message itself if the first rolled back.
 */
public final class PostgresInboxStore implements InboxStore {
  private final String record;

  private PostgresInboxStore(PostgresTables tables) {
    this.record = tables.render("INSERT INTO {inbox} (consumer, message_id, processed_at)"
        + " VALUES (?, ?, now()) ON CONFLICT (consumer, message_id) DO NOTHING");
  }

  /** A builder with the defaults of {@link PostgresOutboxStore}: schema {@code public}, prefix {@code txbox_}. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public boolean record(Connection transaction, String consumer, UUID messageId) throws SQLException {
    try (PreparedStatement p = transaction.prepareStatement(record)) {
      p.setString(1, consumer);
      p.setObject(2, messageId);
      return p.executeUpdate() == 1;
    }
  }

  /** Builds a {@link PostgresInboxStore}; {@link #build()} checks the names. */
  public static final class Builder {
    private String schema = PostgresOutboxStore.DEFAULT_SCHEMA;
    private String tablePrefix = PostgresOutboxStore.DEFAULT_TABLE_PREFIX;

    private Builder() {}

    /** The schema of the tables. Default {@value PostgresOutboxStore#DEFAULT_SCHEMA}. */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The prefix of every table name. Default {@value PostgresOutboxStore#DEFAULT_TABLE_PREFIX}. */
    public Builder tablePrefix(String tablePrefix) {
      this.tablePrefix = tablePrefix;
      return this;
    }

    /** Checks the names and builds the store. */
    public PostgresInboxStore build() {
      return new PostgresInboxStore(new PostgresTables(schema, tablePrefix));
    }
  }
}
