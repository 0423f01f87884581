package io.txbox.postgres.internal;

import io.txbox.jdbc.spi.SqlDialect;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.UUID;

/**
 * PostgreSQL's SQL: {@code timestamptz} and {@code uuid} columns, {@code jsonb} headers, and
 * {@code ON CONFLICT DO NOTHING}, since a failed statement would end the whole transaction.
 */
public final class PostgresDialect implements SqlDialect {
  public static final PostgresDialect INSTANCE = new PostgresDialect();

  private PostgresDialect() {}

  @Override
  public String identifier(String name) {
    return name;
  }

  @Override
  public String currentDatabase() {
    return "current_database()";
  }

  @Override
  public String now() {
    return "now()";
  }

  @Override
  public String shareLock() {
    return "FOR SHARE";
  }

  @Override
  public String timestampType() {
    return "timestamptz";
  }

  @Override
  public String nullableParameter(Class<?> javaType) {
    return "?::" + switch (javaType.getSimpleName()) {
      case "String" -> "text";
      case "Long" -> "bigint";
      case "Instant" -> "timestamptz";
      case "UUID" -> "uuid";
      default -> throw new IllegalArgumentException("no PostgreSQL type for " + javaType);
    };
  }

  @Override
  public String jsonParameter() {
    return "?::jsonb";
  }

  @Override
  public String jsonText(String column) {
    return column + "::text";
  }

  @Override
  public String ignoreDuplicateOf(String keyColumns) {
    return " ON CONFLICT (" + keyColumns + ") DO NOTHING";
  }

  @Override
  public boolean insertedNew(PreparedStatement insert) throws SQLException {
    return insert.executeUpdate() == 1;
  }

  @Override
  public void setUuid(PreparedStatement p, int index, UUID id) throws SQLException {
    p.setObject(index, id);
  }

  @Override
  public UUID getUuid(ResultSet rs, int column) throws SQLException {
    return rs.getObject(column, UUID.class);
  }

  @Override
  public void setInstant(PreparedStatement p, int index, Instant at) throws SQLException {
    p.setObject(index, at == null ? null : at.atOffset(ZoneOffset.UTC));
  }

  @Override
  public Instant getInstant(ResultSet rs, int column) throws SQLException {
    OffsetDateTime at = rs.getObject(column, OffsetDateTime.class);
    return at == null ? null : at.toInstant();
  }
}
