package io.txbox.jdbc.internal;

import io.txbox.jdbc.DeadLetters;
import io.txbox.jdbc.Scope;
import io.txbox.jdbc.spi.SqlDialect;
import io.txbox.jdbc.spi.TableNames;
import io.txbox.jdbc.spi.Transactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The outbox's dead letters and the operators' audit, one SQL text for every database. A retry or
 * discard first locks the scope's dead letters and then works on exactly those, by key: two
 * operators retrying at once put each event back once (the second finds them gone), and a letter
 * that a relay dead-letters meanwhile is neither put back nor deleted, whatever the isolation.
 *
 * <pre>{@code
 * DeadLetters deadLetters = new JdbcDeadLetters(dataSource, tables, dialect);
 * int back = deadLetters.retry(Scope.ALL.withSubscription("orders"), "alice");
 * }</pre>
 */
public final class JdbcDeadLetters implements DeadLetters {
  private final Transactions tx;
  private final SqlDialect dialect;
  private final ScopeFilter filter;
  private final String count;
  private final String list;
  private final String show;
  private final String lock;
  private final String putBack;
  private final String delete;
  private final String audit;
  private final String readAudit;

  public JdbcDeadLetters(DataSource dataSource, TableNames tables, SqlDialect dialect) {
    this.tx = new Transactions(dataSource);
    this.dialect = dialect;
    this.filter = new ScopeFilter(dialect);
    String key = dialect.identifier("key");
    String entry = "subscription, position, id, " + key + ", type, version, destination, error, attempts,"
        + " dead_lettered_at, OCTET_LENGTH(payload)";
    String where = " WHERE " + filter.deadLetterConditions();
    this.count = tables.render("SELECT COUNT(*) FROM {dead_letter}" + where);
    this.list = tables.render("SELECT " + entry + " FROM {dead_letter}" + where
        + " ORDER BY dead_lettered_at, subscription, position LIMIT ?");
    this.show = tables.render("SELECT " + entry + ", payload, content_type, " + dialect.jsonText("headers")
        + ", created_at FROM {dead_letter}"
        + " WHERE subscription = ? AND id = ? ORDER BY position LIMIT 1");
    this.lock = tables.render("SELECT subscription, position FROM {dead_letter}" + where
        + " ORDER BY position, subscription FOR UPDATE");
    // The insert trigger gives each event its bucket and position, after what its key sent meanwhile.
    String columns = "id, " + key + ", type, version, destination, payload, content_type, headers, created_at";
    this.putBack = tables.render("INSERT INTO {outbox} (" + columns + ") SELECT " + columns
        + " FROM {dead_letter} WHERE subscription = ? AND position = ?");
    this.delete = tables.render("DELETE FROM {dead_letter} WHERE subscription = ? AND position = ?");
    this.audit = tables.render("INSERT INTO {audit} (operator, action, target, scope, count, dry_run)"
        + " VALUES (?, ?, ?, ?, ?, ?)");
    this.readAudit = tables.render("SELECT id, at, operator, action, target, scope, count, dry_run FROM {audit}"
        + " ORDER BY id DESC LIMIT ?");
  }

  @Override
  public long count(Scope scope) {
    return tx.inTransaction("counting dead letters", c -> {
      try (PreparedStatement p = c.prepareStatement(count)) {
        filter.bindDeadLetters(p, 1, scope);
        try (ResultSet rs = p.executeQuery()) {
          rs.next();
          return rs.getLong(1);
        }
      }
    });
  }

  @Override
  public List<Entry> list(Scope scope, int limit) {
    return tx.inTransaction("listing dead letters", c -> {
      try (PreparedStatement p = c.prepareStatement(list)) {
        p.setInt(filter.bindDeadLetters(p, 1, scope), limit);
        List<Entry> entries = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            entries.add(entry(rs));
          }
        }
        return entries;
      }
    });
  }

  @Override
  public Optional<Details> show(String subscription, UUID id) {
    return tx.inTransaction("reading a dead letter", c -> {
      try (PreparedStatement p = c.prepareStatement(show)) {
        p.setString(1, subscription);
        dialect.setUuid(p, 2, id);
        try (ResultSet rs = p.executeQuery()) {
          if (!rs.next()) {
            return Optional.empty();
          }
          return Optional.of(new Details(entry(rs), rs.getBytes(12), rs.getString(13), rs.getString(14),
              dialect.getInstant(rs, 15)));
        }
      }
    });
  }

  @Override
  public int retry(Scope scope, String operator) {
    return tx.inTransaction("retrying dead letters", c -> {
      List<Key> letters = lock(c, scope);
      // In position order: the insert trigger gives each event its place after what its key sent meanwhile.
      forEach(c, putBack, letters);
      forEach(c, delete, letters);
      audit(c, operator, "retry", "outbox", scope.describe(), letters.size(), false);
      return letters.size();
    });
  }

  @Override
  public int discard(Scope scope, String operator) {
    return tx.inTransaction("discarding dead letters", c -> {
      List<Key> letters = lock(c, scope);
      forEach(c, delete, letters);
      audit(c, operator, "discard", "outbox", scope.describe(), letters.size(), false);
      return letters.size();
    });
  }

  /** A dead letter's primary key. */
  private record Key(String subscription, long position) {}

  /** Locks the scope's dead letters; their keys in position order. */
  private List<Key> lock(Connection c, Scope scope) throws SQLException {
    List<Key> keys = new ArrayList<>();
    try (PreparedStatement p = c.prepareStatement(lock)) {
      filter.bindDeadLetters(p, 1, scope);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          keys.add(new Key(rs.getString(1), rs.getLong(2)));
        }
      }
    }
    return keys;
  }

  /**
   * Runs {@code sql} once per letter, one execution each: MariaDB Connector/J sends a batch with
   * its bulk protocol, which refuses {@code INSERT ... SELECT} (error 1295).
   */
  private static void forEach(Connection c, String sql, List<Key> letters) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(sql)) {
      for (Key letter : letters) {
        p.setString(1, letter.subscription());
        p.setLong(2, letter.position());
        p.executeUpdate();
      }
    }
  }

  @Override
  public void record(String operator, String action, String target, String scope, long count, boolean dryRun) {
    tx.inTransaction("recording an audit entry", c -> {
      audit(c, operator, action, target, scope, count, dryRun);
      return null;
    });
  }

  @Override
  public List<AuditEntry> audit(int limit) {
    return tx.inTransaction("reading the audit table", c -> {
      try (PreparedStatement p = c.prepareStatement(readAudit)) {
        p.setInt(1, limit);
        List<AuditEntry> entries = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            entries.add(new AuditEntry(rs.getLong(1), dialect.getInstant(rs, 2), rs.getString(3), rs.getString(4),
                rs.getString(5), rs.getString(6), rs.getLong(7), rs.getBoolean(8)));
          }
        }
        return entries;
      }
    });
  }

  private Entry entry(ResultSet rs) throws SQLException {
    return new Entry(rs.getString(1), rs.getLong(2), idOrNull(rs), rs.getString(4),
        rs.getString(5), rs.getInt(6), rs.getString(7), rs.getString(8), rs.getInt(9), dialect.getInstant(rs, 10),
        rs.getInt(11));
  }

  /**
   * The event's id; null for one that is not a UUID, which only a plain-SQL writer can leave (the
   * relay dead-lettered it for that, and its error says so), so that it lists like any other.
   */
  private UUID idOrNull(ResultSet rs) throws SQLException {
    try {
      return dialect.getUuid(rs, 3);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  private void audit(Connection c, String operator, String action, String target, String scope, long count,
      boolean dryRun) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(audit)) {
      p.setString(1, operator);
      p.setString(2, action);
      p.setString(3, target);
      p.setString(4, scope);
      p.setLong(5, count);
      p.setBoolean(6, dryRun);
      p.executeUpdate();
    }
  }
}
