package io.txbox.postgres.internal;

import io.txbox.jdbc.sql.TableNames;
import java.sql.SQLException;
import java.util.regex.Pattern;

/**
 * The qualified names of txbox's tables for one schema and table prefix. Both are checked against
 * a strict pattern before they are ever put into SQL text, which is what keeps them from being a
 * way to inject SQL.
 */
public record PostgresTables(String schema, String prefix) implements TableNames {
  private static final Pattern SCHEMA = Pattern.compile("[a-z_][a-z0-9_]{0,29}");
  private static final Pattern PREFIX = Pattern.compile("([a-z_][a-z0-9_]{0,19})?");

  /** Checks both names; the message names the setting and the rule. */
  public PostgresTables {
    if (schema == null || !SCHEMA.matcher(schema).matches()) {
      throw new IllegalArgumentException("schema must match " + SCHEMA
          + " (lower case letters, digits and _, at most 30 characters), was '" + schema + "'");
    }
    if (prefix == null || !PREFIX.matcher(prefix).matches()) {
      throw new IllegalArgumentException("tablePrefix must match " + PREFIX
          + " (lower case letters, digits and _, at most 20 characters, may be empty), was '"
          + prefix + "'");
    }
  }

  /**
   * {@code e}, explained when it is PostgreSQL's "relation does not exist" (42P01) because
   * txbox's tables were never created where these names point; any other error as it is.
   */
  @Override
  public SQLException explainMissing(SQLException e) {
    if (!"42P01".equals(e.getSQLState())) {
      return e;
    }
    return new SQLException("txbox's tables are missing (" + e.getMessage() + "): create them with"
        + " PostgresOutboxStore.migrate(), which creates the inbox's tables too, so a service that only"
        + " consumes runs it as well; or with `java -jar txbox.jar migrate --schema " + schema + "`, or the"
        + " scripts of `migrate --print-sql`. If they exist elsewhere, set schema ('" + schema + "') and"
        + " tablePrefix ('" + prefix + "') to match", e.getSQLState(), e);
  }

  public String outbox() {
    return qualified("outbox");
  }

  public String subscription() {
    return qualified("subscription");
  }

  public String relayInstance() {
    return qualified("relay_instance");
  }

  public String deadLetter() {
    return qualified("dead_letter");
  }

  public String inbox() {
    return qualified("inbox");
  }

  public String inboxQueue() {
    return qualified("inbox_queue");
  }

  public String inboxKey() {
    return qualified("inbox_key");
  }

  public String inboxParkedKey() {
    return qualified("inbox_parked_key");
  }

  public String audit() {
    return qualified("audit");
  }

  public String setting() {
    return qualified("setting");
  }

  public String schemaVersion() {
    return qualified("schema_version");
  }

  /** The LISTEN/NOTIFY channel writers notify after appending; at most 57 characters. */
  public String channel() {
    return schema + "." + prefix + "outbox";
  }

  /** Replaces {@code {schema}}, {@code {prefix}} and the table placeholders in a SQL text. */
  public String render(String sql) {
    return sql.replace("{outbox}", outbox())
        .replace("{subscription}", subscription())
        .replace("{relay_instance}", relayInstance())
        .replace("{dead_letter}", deadLetter())
        .replace("{setting}", setting())
        .replace("{inbox}", inbox())
        .replace("{inbox_queue}", inboxQueue())
        .replace("{inbox_key}", inboxKey())
        .replace("{inbox_parked_key}", inboxParkedKey())
        .replace("{audit}", audit())
        .replace("{schema}", schema)
        .replace("{prefix}", prefix);
  }

  private String qualified(String table) {
    return schema + "." + prefix + table;
  }
}
