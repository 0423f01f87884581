package io.txbox.postgres;

import io.txbox.jdbc.spi.TableNames;
import java.sql.SQLException;
import java.util.regex.Pattern;

/**
 * The qualified names of txbox's tables on PostgreSQL for one schema and table prefix: the one
 * place their names are made, for the stores here and for the modules that read the same tables
 * (txbox-postgres-cdc). Both parts are checked against a strict pattern before they are ever put
 * into SQL text, which is what keeps them from being a way to inject SQL.
 *
 * <pre>{@code
 * PostgresTables tables = store.tables();
 * String sql = "SELECT value FROM " + tables.setting() + " WHERE name = 'bucket_count'";
 * }</pre>
 *
 * @param schema the schema that holds the tables
 * @param prefix the start of every table's name, such as {@code txbox_}
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

  /** The outbox: the events, one row each. */
  public String outbox() {
    return qualified("outbox");
  }

  /** The outbox table's name without its schema, as logical decoding names a relation. */
  public String outboxName() {
    return prefix + "outbox";
  }

  /** Each subscription's buckets: lease and checkpoint. */
  public String subscription() {
    return qualified("subscription");
  }

  /** The relays alive per subscription. */
  public String relayInstance() {
    return qualified("relay_instance");
  }

  /** The outbox's dead letters. */
  public String deadLetter() {
    return qualified("dead_letter");
  }

  /** The inbox: the ids each consumer handled. */
  public String inbox() {
    return qualified("inbox");
  }

  /** The inbox queue's messages. */
  public String inboxQueue() {
    return qualified("inbox_queue");
  }

  /** The inbox queue's keys. */
  public String inboxKey() {
    return qualified("inbox_key");
  }

  /** The inbox's parked keys. */
  public String inboxParkedKey() {
    return qualified("inbox_parked_key");
  }

  /** What operators did to dead letters and replays. */
  public String audit() {
    return qualified("audit");
  }

  /** txbox's settings: bucket_count, outbox_id. */
  public String setting() {
    return qualified("setting");
  }

  /** The schema versions applied. */
  public String schemaVersion() {
    return qualified("schema_version");
  }

  /** The logical relay's checkpoints, one row per slot (schema version 9). */
  public String slotCheckpoint() {
    return qualified("slot_checkpoint");
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
        .replace("{slot_checkpoint}", slotCheckpoint())
        .replace("{schema}", schema)
        .replace("{prefix}", prefix);
  }

  private String qualified(String table) {
    return schema + "." + prefix + table;
  }
}
