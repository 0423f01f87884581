package io.txbox.jdbc.internal;

import io.txbox.jdbc.sql.JdbcDeadLetters;
import io.txbox.Message;
import io.txbox.jdbc.PacedPublishing;
import io.txbox.jdbc.Replay;
import io.txbox.jdbc.Scope;
import io.txbox.jdbc.support.Transactions;
import io.txbox.spi.Publisher;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.LongConsumer;
import javax.sql.DataSource;

/** Replays on PostgreSQL, as {@link io.txbox.jdbc.PostgresOutboxStore#replay()} gives them. */
public final class PostgresReplay implements Replay {
  private final Transactions tx;
  private final PostgresTables tables;
  private final JdbcDeadLetters audit;

  public PostgresReplay(DataSource dataSource, PostgresTables tables) {
    this.tx = new Transactions(dataSource);
    this.tables = tables;
    this.audit = new JdbcDeadLetters(dataSource, tables, PostgresDialect.INSTANCE);
  }

  @Override
  public Preview preview(Scope scope) {
    Replay.requireLogScope(scope);
    return tx.inTransaction("previewing a replay", c -> {
      checkSubscription(c, scope);
      Map<String, Long> byType = new LinkedHashMap<>();
      long count = 0;
      try (PreparedStatement p = c.prepareStatement("SELECT o.type, count(*) FROM " + tables.outbox() + " o"
          + where() + " GROUP BY o.type ORDER BY count(*) DESC, o.type")) {
        bind(p, scope);
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            byType.put(rs.getString(1), rs.getLong(2));
            count += rs.getLong(2);
          }
        }
      }
      return new Preview(count, end(c, scope, "ASC"), end(c, scope, "DESC"), byType);
    });
  }

  @Override
  public Result replay(Request request, Publisher publisher, LongConsumer progress) throws InterruptedException {
    tx.inTransaction("checking the replay's subscription", c -> {
      checkSubscription(c, request.scope());
      return null;
    });
    PacedPublishing run = new PacedPublishing(request, publisher, progress);
    try {
      // A batch never holds more than a second's worth, so the rate holds from the first batch on.
      int batchSize = Math.min(request.batchSize(), request.eventsPerSecond());
      Cursor after = Cursor.START;
      List<Read> page;
      do {
        page = page(request.scope(), after, batchSize);
        run.publish(page.stream().filter(r -> r.message() != null)
            .map(r -> PacedPublishing.retarget(r.message(), request.toDestination())).toList());
        after = page.isEmpty() ? after : page.get(page.size() - 1).cursor();
      } while (page.size() == batchSize);
    } finally {
      audit.record(request.operator(), "replay", "outbox", request.describe(), run.published(), false);
    }
    return run.result();
  }

  /** Where a page of the log ends: the primary key of its last row. */
  private record Cursor(int bucket, String txId, long position) {
    static final Cursor START = new Cursor(-1, "0", 0);
  }

  private record Read(Cursor cursor, Message message) {}

  /**
   * The next {@code limit} events of the scope after {@code after}, in primary-key order: one
   * index scan, each bucket (so each key) in the relay's order. A row that breaks the message
   * rules comes back without a message and is skipped: the relay dead-lettered it, it never
   * reached a broker.
   */
  private List<Read> page(Scope scope, Cursor after, int limit) {
    return tx.inTransaction("reading the log for a replay", c -> {
      try (PreparedStatement p = c.prepareStatement("SELECT o.bucket, o.tx_id::text, o.position, o.id, o.key, o.type,"
          + " o.version, o.destination, o.payload, o.content_type, o.headers::text, o.created_at, o.available_at"
          + " FROM " + tables.outbox() + " o" + where() + " AND (o.bucket, o.tx_id, o.position) > (?, ?::xid8, ?)"
          + " ORDER BY o.bucket, o.tx_id, o.position LIMIT ?")) {
        int next = bind(p, scope);
        p.setInt(next++, after.bucket());
        p.setString(next++, after.txId());
        p.setLong(next++, after.position());
        p.setInt(next, limit);
        List<Read> reads = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            Cursor cursor = new Cursor(rs.getInt(1), rs.getString(2), rs.getLong(3));
            try {
              reads.add(new Read(cursor, PostgresRows.message(rs, 4)));
            } catch (RuntimeException unreadable) {
              reads.add(new Read(cursor, null));
            }
          }
        }
        return reads;
      }
    });
  }

  private Optional<Event> end(java.sql.Connection c, Scope scope, String direction) throws SQLException {
    try (PreparedStatement p = c.prepareStatement("SELECT o.position, o.id, o.key, o.type, o.destination, o.created_at"
        + " FROM " + tables.outbox() + " o" + where() + " ORDER BY o.created_at " + direction + ", o.position "
        + direction + " LIMIT 1")) {
      bind(p, scope);
      try (ResultSet rs = p.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        return Optional.of(new Event(rs.getLong(1), rs.getObject(2, UUID.class), rs.getString(3), rs.getString(4),
            rs.getString(5), rs.getObject(6, OffsetDateTime.class).toInstant()));
      }
    }
  }


  /** A scope's subscription must exist: a typo would otherwise replay nothing and look fine. */
  private void checkSubscription(java.sql.Connection c, Scope scope) throws SQLException {
    if (scope.subscription() == null) {
      return;
    }
    try (PreparedStatement p = c.prepareStatement("SELECT string_agg(DISTINCT subscription, ', ') FILTER"
        + " (WHERE subscription <> ?), bool_or(subscription = ?) FROM " + tables.subscription())) {
      p.setString(1, scope.subscription());
      p.setString(2, scope.subscription());
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        if (!rs.getBoolean(2)) {
          throw new IllegalArgumentException("invalid subscription '" + scope.subscription()
              + "': no relay has run it here; known subscriptions: "
              + (rs.getString(1) == null ? "none" : rs.getString(1)));
        }
      }
    }
  }

  /** Every condition of a scope; a null parameter matches anything. */
  private String where() {
    return " WHERE (?::text IS NULL OR EXISTS (SELECT 1 FROM " + tables.subscription() + " s"
        + "   WHERE s.subscription = ? AND s.bucket = o.bucket AND (o.tx_id, o.position) <= (s.tx_id, s.position)"
        + "     AND NOT EXISTS (SELECT 1 FROM " + tables.deadLetter() + " d"
        + "       WHERE d.subscription = s.subscription AND d.position = o.position)))"
        + " AND (?::text IS NULL OR o.destination = ?) AND (?::text IS NULL OR o.type = ?)"
        + " AND (?::text IS NULL OR o.key = ?)"
        + " AND (?::timestamptz IS NULL OR o.created_at >= ?) AND (?::timestamptz IS NULL OR o.created_at < ?)"
        + " AND (?::bigint IS NULL OR o.position >= ?) AND (?::bigint IS NULL OR o.position <= ?)"
        + " AND (?::uuid IS NULL OR o.id = ?)";
  }

  /** Binds a scope to {@link #where()}; returns the next parameter. */
  private static int bind(PreparedStatement p, Scope scope) throws SQLException {
    return OptionalFilters.bind(p, 1, scope.subscription(), scope.destination(), scope.type(), scope.key(),
        scope.since(), scope.until(), scope.fromPosition(), scope.toPosition(), scope.id());
  }
}
