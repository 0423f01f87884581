package io.txbox.jdbc.internal;

import io.txbox.jdbc.DeadLetters;
import io.txbox.jdbc.Scope;
import io.txbox.jdbc.support.Transactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/** The outbox's dead letters on PostgreSQL, as {@link io.txbox.jdbc.PostgresOutboxStore#deadLetters()} gives them. */
public final class PostgresDeadLetters implements DeadLetters {
  private final Transactions tx;
  private final PostgresTables tables;

  public PostgresDeadLetters(DataSource dataSource, PostgresTables tables) {
    this.tx = new Transactions(dataSource);
    this.tables = tables;
  }

  @Override
  public long count(Scope scope) {
    return tx.inTransaction("counting dead letters", c -> {
      try (PreparedStatement p = c.prepareStatement("SELECT count(*) FROM " + tables.deadLetter() + where())) {
        bind(p, scope, 1);
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
      try (PreparedStatement p = c.prepareStatement("SELECT " + ENTRY + " FROM " + tables.deadLetter() + where()
          + " ORDER BY dead_lettered_at, subscription, position LIMIT ?")) {
        int next = bind(p, scope, 1);
        p.setInt(next, limit);
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
      try (PreparedStatement p = c.prepareStatement("SELECT " + ENTRY + ", payload, content_type, headers::text,"
          + " created_at FROM " + tables.deadLetter() + " WHERE subscription = ? AND id = ? ORDER BY position LIMIT 1")) {
        p.setString(1, subscription);
        p.setObject(2, id);
        try (ResultSet rs = p.executeQuery()) {
          if (!rs.next()) {
            return Optional.empty();
          }
          return Optional.of(new Details(entry(rs), rs.getBytes(12), rs.getString(13), rs.getString(14),
              rs.getObject(15, OffsetDateTime.class).toInstant()));
        }
      }
    });
  }

  @Override
  public int retry(Scope scope, String operator) {
    return tx.inTransaction("retrying dead letters", c -> {
      int count;
      try (PreparedStatement p = c.prepareStatement("WITH gone AS (DELETE FROM " + tables.deadLetter() + where()
          + " RETURNING *) INSERT INTO " + tables.outbox() + " (id, key, type, version, destination, payload,"
          + " content_type, headers, created_at) SELECT id, key, type, version, destination, payload, content_type,"
          + " headers, created_at FROM gone ORDER BY position")) {
        bind(p, scope, 1);
        count = p.executeUpdate();
      }
      audit(c, operator, "retry", "outbox", scope.describe(), count, false);
      return count;
    });
  }

  @Override
  public int discard(Scope scope, String operator) {
    return tx.inTransaction("discarding dead letters", c -> {
      int count;
      try (PreparedStatement p = c.prepareStatement("DELETE FROM " + tables.deadLetter() + where())) {
        bind(p, scope, 1);
        count = p.executeUpdate();
      }
      audit(c, operator, "discard", "outbox", scope.describe(), count, false);
      return count;
    });
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
      try (PreparedStatement p = c.prepareStatement("SELECT id, at, operator, action, target, scope, count, dry_run"
          + " FROM " + tables.audit() + " ORDER BY id DESC LIMIT ?")) {
        p.setInt(1, limit);
        List<AuditEntry> entries = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            entries.add(new AuditEntry(rs.getLong(1), rs.getObject(2, OffsetDateTime.class).toInstant(),
                rs.getString(3), rs.getString(4), rs.getString(5), rs.getString(6), rs.getLong(7), rs.getBoolean(8)));
          }
        }
        return entries;
      }
    });
  }

  private static final String ENTRY = "subscription, position, id, key, type, version, destination, error, attempts,"
      + " dead_lettered_at, octet_length(payload)";

  private static Entry entry(ResultSet rs) throws SQLException {
    return new Entry(rs.getString(1), rs.getLong(2), rs.getObject(3, UUID.class), rs.getString(4), rs.getString(5),
        rs.getInt(6), rs.getString(7), rs.getString(8), rs.getInt(9),
        rs.getObject(10, OffsetDateTime.class).toInstant(), rs.getInt(11));
  }

  /** Every condition of a scope; a null parameter matches anything. */
  private static String where() {
    return " WHERE (?::text IS NULL OR subscription = ?) AND (?::text IS NULL OR destination = ?)"
        + " AND (?::text IS NULL OR type = ?) AND (?::text IS NULL OR key = ?)"
        + " AND (?::timestamptz IS NULL OR dead_lettered_at >= ?) AND (?::timestamptz IS NULL OR dead_lettered_at < ?)"
        + " AND (?::bigint IS NULL OR position >= ?) AND (?::bigint IS NULL OR position <= ?)"
        + " AND (?::text IS NULL OR strpos(error, ?) > 0) AND (?::uuid IS NULL OR id = ?)";
  }

  /** Binds a scope to {@link #where()} from parameter {@code first}; returns the next parameter. */
  private static int bind(PreparedStatement p, Scope scope, int first) throws SQLException {
    return OptionalFilters.bind(p, first, scope.subscription(), scope.destination(), scope.type(), scope.key(),
        scope.since(), scope.until(), scope.fromPosition(), scope.toPosition(), scope.errorContaining(), scope.id());
  }

  private void audit(Connection c, String operator, String action, String target, String scope, long count,
      boolean dryRun) throws SQLException {
    try (PreparedStatement p = c.prepareStatement("INSERT INTO " + tables.audit()
        + " (operator, action, target, scope, count, dry_run) VALUES (?, ?, ?, ?, ?, ?)")) {
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
