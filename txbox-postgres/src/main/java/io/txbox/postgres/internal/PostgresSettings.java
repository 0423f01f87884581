package io.txbox.postgres.internal;

import io.txbox.TxboxException;
import io.txbox.postgres.PostgresTables;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;

/** Reads the settings txbox stores beside its tables, and checks that the tables exist. */
public final class PostgresSettings {
  private PostgresSettings() {}

  /** The bucket count the outbox was created with. */
  public static int bucketCount(Connection c, PostgresTables tables) throws SQLException {
    requireTables(c, tables);
    try (PreparedStatement p = c.prepareStatement(
        "SELECT value FROM " + tables.setting() + " WHERE name = 'bucket_count'");
        ResultSet rs = p.executeQuery()) {
      if (!rs.next()) {
        throw new TxboxException("table " + tables.setting() + " has no bucket_count; run txbox migrate");
      }
      return Integer.parseInt(rs.getString(1));
    }
  }

  /** This outbox's id, made by schema version 10; empty on tables not migrated since. */
  public static Optional<String> outboxId(Connection c, PostgresTables tables) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(
        "SELECT value FROM " + tables.setting() + " WHERE name = 'outbox_id'");
        ResultSet rs = p.executeQuery()) {
      return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
    }
  }

  private static void requireTables(Connection c, PostgresTables tables) throws SQLException {
    for (String table : new String[] {tables.outbox(), tables.subscription(), tables.setting()}) {
      try (PreparedStatement p = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
        p.setString(1, table);
        try (ResultSet rs = p.executeQuery()) {
          rs.next();
          if (!rs.getBoolean(1)) {
            throw new TxboxException("table " + table + " does not exist: check the schema ('"
                + tables.schema() + "') and tablePrefix ('" + tables.prefix()
                + "') settings, or create the tables with `txbox migrate` using the same settings");
          }
        }
      }
    }
  }
}
