package io.txbox.server;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/** What the relay tests read back from a PostgreSQL outbox: each key's events in log order, and who holds leases. */
final class OutboxRows {
  private OutboxRows() {}

  /** Per key, the events' ids in the order the table relay sends them: {@code (tx_id, position)}. */
  static Map<String, List<String>> byKey(DataSource dataSource, String outboxTable) throws SQLException {
    Map<String, List<String>> byKey = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement p = c.prepareStatement("SELECT key, id::text FROM " + outboxTable + " ORDER BY tx_id, position");
        ResultSet rs = p.executeQuery()) {
      while (rs.next()) {
        byKey.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getString(2));
      }
    }
    return byKey;
  }

  /** How many relays hold a live lease on a bucket of the tables in {@code schema}. */
  static int owners(DataSource dataSource, String schema) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement p = c.prepareStatement("SELECT count(DISTINCT owner) FROM " + schema
            + ".txbox_subscription WHERE lease_until > now()");
        ResultSet rs = p.executeQuery()) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
