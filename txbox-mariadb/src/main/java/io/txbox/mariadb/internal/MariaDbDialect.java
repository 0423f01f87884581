package io.txbox.mariadb.internal;

import io.txbox.jdbc.spi.SqlDialect;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.UUID;

/**
 * MariaDB's SQL (and MySQL 8's, which shares every form used here): UTC {@code DATETIME(6)}
 * times compared with {@code UTC_TIMESTAMP(6)}, so that no session's time zone changes what a
 * lease or a delay means; ids as text; {@code key} quoted. A duplicate key fails only its own
 * statement, so an insert is plain and its error 1062 means "there already": {@code INSERT IGNORE}
 * would also turn truncation and other errors into warnings.
 */
public final class MariaDbDialect implements SqlDialect {
  public static final MariaDbDialect INSTANCE = new MariaDbDialect();
  /** MariaDB's and MySQL's "duplicate entry" for a key. */
  private static final int DUPLICATE_KEY = 1062;

  private MariaDbDialect() {}

  @Override
  public String identifier(String name) {
    return "`" + name + "`";
  }

  @Override
  public String currentDatabase() {
    return "DATABASE()";
  }

  @Override
  public String now() {
    return MariaDbSql.NOW;
  }

  @Override
  public String shareLock() {
    return "LOCK IN SHARE MODE";
  }

  @Override
  public String timestampType() {
    return "DATETIME(6)";
  }

  @Override
  public String nullableParameter(Class<?> javaType) {
    return "?"; // a null parameter needs no type here
  }

  @Override
  public String jsonParameter() {
    return "?";
  }

  @Override
  public String jsonText(String column) {
    return column;
  }

  @Override
  public String ignoreDuplicateOf(String keyColumns) {
    return "";
  }

  @Override
  public boolean insertedNew(PreparedStatement insert) throws SQLException {
    try {
      return insert.executeUpdate() == 1;
    } catch (SQLException e) {
      if (e.getErrorCode() == DUPLICATE_KEY) {
        return false;
      }
      throw e;
    }
  }

  @Override
  public void setUuid(PreparedStatement p, int index, UUID id) throws SQLException {
    p.setString(index, id.toString());
  }

  @Override
  public UUID getUuid(ResultSet rs, int column) throws SQLException {
    String id = rs.getString(column);
    return id == null ? null : UUID.fromString(id);
  }

  @Override
  public void setInstant(PreparedStatement p, int index, Instant at) throws SQLException {
    p.setObject(index, at == null ? null : LocalDateTime.ofInstant(at, ZoneOffset.UTC));
  }

  @Override
  public Instant getInstant(ResultSet rs, int column) throws SQLException {
    LocalDateTime at = rs.getObject(column, LocalDateTime.class);
    return at == null ? null : at.toInstant(ZoneOffset.UTC);
  }
}
