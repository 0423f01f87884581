package io.txbox.jdbc.spi;

import java.sql.SQLException;

/**
 * Where txbox's tables are for one store: a database module's names for one schema and table
 * prefix, checked against strict patterns before they reach any SQL text.
 *
 * <pre>{@code
 * String sql = tables.render("DELETE FROM {inbox} WHERE consumer = ?");
 * }</pre>
 */
public interface TableNames {
  /**
   * {@code sql} with each table placeholder ({@code {outbox}}, {@code {inbox}},
   * {@code {inbox_queue}}, {@code {inbox_key}}, {@code {inbox_parked_key}}, {@code {dead_letter}},
   * {@code {subscription}}, {@code {setting}}, {@code {audit}}, ...) replaced by its table's name.
   */
  String render(String sql);

  /**
   * {@code e}, explained when the database says a table does not exist because txbox's tables were
   * never created where these names point (which setting to check, how to create them); any other
   * error as it is.
   */
  SQLException explainMissing(SQLException e);
}
