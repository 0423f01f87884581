package io.txbox.mariadb.internal;

import io.txbox.jdbc.spi.TableNames;
import java.sql.SQLException;
import java.util.regex.Pattern;

/**
 * The names of txbox's tables for one table prefix, in the connection's current database. The
 * prefix is checked against a strict pattern before it is ever put into SQL text, which is what
 * keeps it from being a way to inject SQL.
 */
public record MariaDbTables(String prefix) implements TableNames {
  private static final Pattern PREFIX = Pattern.compile("([a-z_][a-z0-9_]{0,19})?");
  /** MariaDB's and MySQL's "table doesn't exist". */
  private static final int NO_SUCH_TABLE = 1146;

  /** Checks the prefix; the message names the setting and the rule. */
  public MariaDbTables {
    if (prefix == null || !PREFIX.matcher(prefix).matches()) {
      throw new IllegalArgumentException("tablePrefix must match " + PREFIX
          + " (lower case letters, digits and _, at most 20 characters, may be empty), was '"
          + prefix + "'");
    }
  }

  /**
   * {@code e}, explained when the server says a table does not exist because txbox's tables were
   * never created where these names point; any other error as it is.
   */
  @Override
  public SQLException explainMissing(SQLException e) {
    if (e.getErrorCode() != NO_SUCH_TABLE) {
      return e;
    }
    return new SQLException("txbox's tables are missing (" + e.getMessage() + "): create them with"
        + " MariaDbOutboxStore.migrate(), or with the script of MariaDbOutboxStore.migrationScript(),"
        + " in the database the JDBC URL names. If they exist with another prefix, set tablePrefix ('"
        + prefix + "') to match", e.getSQLState(), e.getErrorCode(), e);
  }

  /** {@code sql} with {@code {outbox}}, {@code {inbox}} and the other names filled in. */
  public String render(String sql) {
    return sql.replace("{outbox}", prefix + "outbox")
        .replace("{writer_epoch}", prefix + "writer_epoch")
        .replace("{subscription}", prefix + "subscription")
        .replace("{relay_instance}", prefix + "relay_instance")
        .replace("{dead_letter}", prefix + "dead_letter")
        .replace("{setting}", prefix + "setting")
        .replace("{inbox}", prefix + "inbox")
        .replace("{inbox_queue}", prefix + "inbox_queue")
        .replace("{inbox_key}", prefix + "inbox_key")
        .replace("{inbox_parked_key}", prefix + "inbox_parked_key")
        .replace("{audit}", prefix + "audit");
  }
}
