package io.txbox.server;

import io.txbox.cdc.LogicalReplication;
import io.txbox.jdbc.JdbcOutboxStore;
import java.util.Properties;
import javax.sql.DataSource;
import picocli.CommandLine.Option;

/**
 * The replication slot, publication and WAL-message prefix that logical decoding uses, shared by
 * {@code relay --source logical}, {@code migrate --logical} and {@code logical}.
 *
 * <pre>{@code
 * @Mixin LogicalOptions logical;
 * LogicalReplication replication = logical.replication(ds, store);
 * }</pre>
 */
public final class LogicalOptions {
  @Option(names = "--slot", defaultValue = LogicalReplication.DEFAULT_SLOT,
      description = "Replication slot (logical decoding). Default: ${DEFAULT-VALUE}.")
  String slot;

  @Option(names = "--publication", defaultValue = LogicalReplication.DEFAULT_PUBLICATION,
      description = "Publication of the outbox table's inserts (logical decoding). Default: ${DEFAULT-VALUE}.")
  String publication;

  @Option(names = "--message-prefix", defaultValue = LogicalReplication.DEFAULT_MESSAGE_PREFIX,
      description = "Prefix of the events' WAL messages (logical decoding). Default: ${DEFAULT-VALUE}.")
  String messagePrefix;

  /** Options picocli fills in. */
  public LogicalOptions() {}

  /** The slot and publication these options name, over {@code store}'s tables. */
  public LogicalReplication replication(DataSource dataSource, JdbcOutboxStore store) {
    return LogicalReplication.builder(dataSource, store)
        .slot(slot).publication(publication).messagePrefix(messagePrefix).build();
  }

  /** User and password for the relay's own replication connection, when not in the URL. */
  static Properties credentials(DatabaseOptions database) {
    Properties p = new Properties();
    if (database.user != null) {
      p.setProperty("user", database.user);
    }
    if (database.password != null) {
      p.setProperty("password", database.password);
    }
    return p;
  }
}
