package io.txbox.jdbc.internal;

import io.txbox.Message;
import io.txbox.jdbc.DeadLetters;
import io.txbox.jdbc.PacedPublishing;
import io.txbox.jdbc.Replay;
import io.txbox.jdbc.Scope;
import io.txbox.jdbc.spi.LogKey;
import io.txbox.jdbc.spi.LogKey.Cursor;
import io.txbox.jdbc.spi.SqlDialect;
import io.txbox.jdbc.spi.TableNames;
import io.txbox.jdbc.spi.Transactions;
import io.txbox.spi.Publisher;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.LongConsumer;
import javax.sql.DataSource;

/**
 * Replays, one SQL text for every database: the log read in pages in its key's order (see
 * {@link LogKey}), each bucket, so each key, in the relay's order, and published by
 * {@link PacedPublishing}; every replay audited.
 *
 * <pre>{@code
 * Replay replay = new JdbcReplay(dataSource, tables, dialect, logKey);
 * Replay.Preview preview = replay.preview(Scope.ALL.withType("OrderPlaced"));
 * }</pre>
 */
public final class JdbcReplay implements Replay {
  private final Transactions tx;
  private final SqlDialect dialect;
  private final LogKey logKey;
  private final ScopeFilter filter;
  private final DeadLetters audit;
  private final String byType;
  private final String first;
  private final String last;
  private final String page;
  private final String subscriptions;

  public JdbcReplay(DataSource dataSource, TableNames tables, SqlDialect dialect, LogKey logKey) {
    this.tx = new Transactions(dataSource);
    this.dialect = dialect;
    this.logKey = logKey;
    this.filter = new ScopeFilter(dialect);
    this.audit = new JdbcDeadLetters(dataSource, tables, dialect);
    // With a subscription: only what it relayed, at or below its bucket's checkpoint, and not
    // dead-lettered, since that never reached its broker.
    String where = tables.render(" WHERE (" + dialect.nullableParameter(String.class) + " IS NULL OR EXISTS ("
        + "   SELECT 1 FROM {subscription} s WHERE s.subscription = ? AND s.bucket = o.bucket"
        + "     AND " + logKey.atOrBelowCheckpoint()
        + "     AND NOT EXISTS (SELECT 1 FROM {dead_letter} d"
        + "       WHERE d.subscription = s.subscription AND d.position = o.position)))"
        + " AND " + filter.eventConditions("o.", "created_at"));
    this.byType = tables.render("SELECT o.type, COUNT(*) FROM {outbox} o" + where
        + " GROUP BY o.type ORDER BY COUNT(*) DESC, o.type");
    String end = "SELECT o.position, o.id, o." + dialect.identifier("key") + ", o.type, o.destination, o.created_at"
        + " FROM {outbox} o" + where;
    this.first = tables.render(end + " ORDER BY o.created_at, o.position LIMIT 1");
    this.last = tables.render(end + " ORDER BY o.created_at DESC, o.position DESC LIMIT 1");
    this.page = tables.render("SELECT " + logKey.columns() + ", " + messageColumns() + " FROM {outbox} o" + where
        + " AND " + logKey.after() + " ORDER BY " + logKey.order() + " LIMIT ?");
    this.subscriptions = tables.render("SELECT DISTINCT subscription FROM {subscription} ORDER BY subscription");
  }

  private String messageColumns() {
    return "o.id, o." + dialect.identifier("key") + ", o.type, o.version, o.destination, o.payload, o.content_type, "
        + dialect.jsonText("o.headers") + ", o.created_at, o.available_at";
  }

  @Override
  public Preview preview(Scope scope) {
    Replay.requireLogScope(scope);
    return tx.inTransaction("previewing a replay", c -> {
      checkSubscription(c, scope);
      Map<String, Long> counts = new LinkedHashMap<>();
      long count = 0;
      try (PreparedStatement p = c.prepareStatement(byType)) {
        bind(p, scope);
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            counts.put(rs.getString(1), rs.getLong(2));
            count += rs.getLong(2);
          }
        }
      }
      return new Preview(count, end(c, first, scope), end(c, last, scope), counts);
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
      List<Read> reads;
      do {
        reads = page(request.scope(), after, batchSize);
        run.publish(reads.stream().filter(r -> r.message() != null)
            .map(r -> PacedPublishing.retarget(r.message(), request.toDestination())).toList());
        after = reads.isEmpty() ? after : reads.get(reads.size() - 1).cursor();
      } while (reads.size() == batchSize);
    } finally {
      audit.record(request.operator(), "replay", "outbox", request.describe(), run.published(), false);
    }
    return run.result();
  }

  private record Read(Cursor cursor, Message message) {}

  /**
   * The next {@code limit} events of the scope after {@code after}. A row that breaks the message
   * rules comes back without a message and is skipped: the relay dead-lettered it, it never
   * reached a broker.
   */
  private List<Read> page(Scope scope, Cursor after, int limit) {
    return tx.inTransaction("reading the log for a replay", c -> {
      try (PreparedStatement p = c.prepareStatement(page)) {
        p.setInt(logKey.bindAfter(p, bind(p, scope), after), limit);
        List<Read> reads = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            Cursor cursor = new Cursor(rs.getInt(1), rs.getString(2), rs.getLong(3));
            try {
              reads.add(new Read(cursor, dialect.message(rs, 4)));
            } catch (RuntimeException unreadable) {
              reads.add(new Read(cursor, null));
            }
          }
        }
        return reads;
      }
    });
  }

  private Optional<Event> end(Connection c, String sql, Scope scope) throws SQLException {
    try (PreparedStatement p = c.prepareStatement(sql)) {
      bind(p, scope);
      try (ResultSet rs = p.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        UUID id;
        try {
          id = dialect.getUuid(rs, 2);
        } catch (IllegalArgumentException notAnId) {
          id = null; // a plain-SQL row the relay dead-lettered; the preview still shows where the scope ends
        }
        return Optional.of(new Event(rs.getLong(1), id, rs.getString(3), rs.getString(4), rs.getString(5),
            dialect.getInstant(rs, 6)));
      }
    }
  }

  /** A scope's subscription must exist: a typo would otherwise replay nothing and look fine. */
  private void checkSubscription(Connection c, Scope scope) throws SQLException {
    if (scope.subscription() == null) {
      return;
    }
    List<String> known = new ArrayList<>();
    try (PreparedStatement p = c.prepareStatement(subscriptions); ResultSet rs = p.executeQuery()) {
      while (rs.next()) {
        known.add(rs.getString(1));
      }
    }
    if (!known.contains(scope.subscription())) {
      throw new IllegalArgumentException("invalid subscription '" + scope.subscription()
          + "': no relay has run it here; known subscriptions: " + (known.isEmpty() ? "none" : String.join(", ", known)));
    }
  }

  /** Binds a scope to the conditions; returns the next parameter. */
  private int bind(PreparedStatement p, Scope scope) throws SQLException {
    return filter.bindEvent(p, filter.bind(p, 1, scope.subscription()), scope);
  }
}
