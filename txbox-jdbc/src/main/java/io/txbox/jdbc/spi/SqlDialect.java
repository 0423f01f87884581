package io.txbox.jdbc.spi;

import io.txbox.Message;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.UUID;

/**
 * What differs between the SQL of two databases, for the statements txbox's JDBC code writes once
 * for all of them: quoting, the time, share locks, inserting unless a row exists, JSON and
 * timestamps. A database module implements it; the statements stay in the shared classes of this
 * package, such as {@link InboxParking}. An operation whose one-statement form matters for speed
 * stays the database's own instead (PostgreSQL's commit-safe read, MariaDB's epochs).
 *
 * <p>A dialect renders SQL fragments from constants alone, never from input.
 *
 * <pre>{@code
 * String column = dialect.identifier("key");          // key on PostgreSQL, `key` on MariaDB
 * String insert = "INSERT INTO t (id) VALUES (?)" + dialect.ignoreDuplicateOf("id");
 * boolean added = dialect.insertedNew(statement);    // false when the row was there already
 * }</pre>
 */
public interface SqlDialect {
  /** {@code name} as a column name, quoted where the database reserves it ({@code key}). */
  String identifier(String name);

  /** The SQL function that names the database a connection is in, such as {@code current_database()}. */
  String currentDatabase();

  /** The current time as the tables hold it, in SQL. */
  String now();

  /** The clause that reads rows under a shared lock: {@code FOR SHARE} in standard SQL. */
  String shareLock();

  /** The SQL type of the tables' timestamps, for a typed {@code NULL}. */
  String timestampType();

  /**
   * A parameter of {@code javaType} ({@code String}, {@code Long}, {@code Instant} or {@code UUID})
   * that may be bound to null, as in {@code (? IS NULL OR column = ?)}: cast where the database
   * cannot tell a null's type from the parameter alone.
   */
  String nullableParameter(Class<?> javaType);

  /** A parameter that takes a JSON object as text (see {@link JsonHeaders#write}). */
  String jsonParameter();

  /** A JSON column read as its text, for {@link JsonHeaders#parse}. */
  String jsonText(String column);

  /**
   * What follows an {@code INSERT} so that a row whose key exists already is left alone rather
   * than failing the transaction; {@code keyColumns} is that key. Empty where the database's
   * duplicate-key error leaves the transaction usable: {@link #insertedNew} then absorbs it.
   */
  String ignoreDuplicateOf(String keyColumns);

  /**
   * Runs an insert ended by {@link #ignoreDuplicateOf}: true when it added its row, false when a
   * row with its key was there already (the transaction goes on either way).
   */
  boolean insertedNew(PreparedStatement insert) throws SQLException;

  void setUuid(PreparedStatement p, int index, UUID id) throws SQLException;

  UUID getUuid(ResultSet rs, int column) throws SQLException;

  /** Binds an instant (or {@code null}) as the tables' timestamp. */
  void setInstant(PreparedStatement p, int index, Instant at) throws SQLException;

  /** A timestamp column as an instant, or {@code null}. */
  Instant getInstant(ResultSet rs, int column) throws SQLException;

  /**
   * The ten columns of a message that {@link #message} maps, read from the table aliased
   * {@code alias}: a stored body has no {@code available_at}, so that one is a typed null.
   */
  default String messageColumns(String alias) {
    String a = alias + ".";
    return a + "message_id, " + a + identifier("key") + ", " + a + "type, " + a + "version, " + a + "destination, "
        + a + "payload, " + a + "content_type, " + jsonText(a + "headers") + ", " + a + "created_at, CAST(NULL AS "
        + timestampType() + ")";
  }

  /**
   * Maps ten columns from {@code first} on: id, key, type, version, destination, payload,
   * content_type, headers as text, created_at, available_at.
   */
  default Message message(ResultSet rs, int first) throws SQLException {
    return new Message(
        getUuid(rs, first),
        rs.getString(first + 2),
        rs.getInt(first + 3),
        rs.getString(first + 1),
        rs.getString(first + 4),
        rs.getBytes(first + 5),
        rs.getString(first + 6),
        JsonHeaders.parse(rs.getString(first + 7)),
        getInstant(rs, first + 8),
        getInstant(rs, first + 9));
  }
}
