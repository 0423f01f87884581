package io.txbox.jdbc.internal;

import io.txbox.jdbc.Scope;
import io.txbox.jdbc.spi.SqlDialect;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.util.UUID;

/**
 * A {@link Scope} as SQL conditions, each {@code (? IS NULL OR condition)}: each value is bound
 * twice, so that a null one matches anything. Dead letters and replays select this way.
 *
 * <pre>{@code
 * ScopeFilter filter = new ScopeFilter(dialect);
 * String sql = "SELECT count(*) FROM dead_letter WHERE " + filter.deadLetterConditions();
 * filter.bindDeadLetters(statement, 1, scope);
 * }</pre>
 */
public final class ScopeFilter {
  private final SqlDialect dialect;

  public ScopeFilter(SqlDialect dialect) {
    this.dialect = dialect;
  }

  /**
   * The conditions on the dead letter table: the subscription, the event's columns, when it was
   * dead-lettered and its error.
   */
  public String deadLetterConditions() {
    return condition(String.class, "subscription = ?") + " AND " + eventConditions("", "dead_lettered_at")
        + " AND " + condition(String.class, "POSITION(? IN error) > 0");
  }

  /**
   * The conditions on an event's columns, prefixed with {@code alias}: destination, type, key,
   * {@code time} in the period, position and id.
   */
  public String eventConditions(String alias, String time) {
    return condition(String.class, alias + "destination = ?")
        + " AND " + condition(String.class, alias + "type = ?")
        + " AND " + condition(String.class, alias + dialect.identifier("key") + " = ?")
        + " AND " + condition(Instant.class, alias + time + " >= ?")
        + " AND " + condition(Instant.class, alias + time + " < ?")
        + " AND " + condition(Long.class, alias + "position >= ?")
        + " AND " + condition(Long.class, alias + "position <= ?")
        + " AND " + condition(UUID.class, alias + "id = ?");
  }

  /** Binds {@link #deadLetterConditions()} from {@code first}; returns the next parameter. */
  public int bindDeadLetters(PreparedStatement p, int first, Scope scope) throws SQLException {
    int next = bind(p, first, scope.subscription());
    next = bindEvent(p, next, scope);
    return bind(p, next, scope.errorContaining());
  }

  /** Binds {@link #eventConditions} from {@code first}; returns the next parameter. */
  public int bindEvent(PreparedStatement p, int first, Scope scope) throws SQLException {
    return bind(p, first, scope.destination(), scope.type(), scope.key(), scope.since(), scope.until(),
        scope.fromPosition(), scope.toPosition(), scope.id());
  }

  /** Binds each value to two parameters from {@code first}; returns the next parameter. */
  public int bind(PreparedStatement p, int first, Object... values) throws SQLException {
    int i = first;
    for (Object value : values) {
      for (int twice = 0; twice < 2; twice++, i++) {
        if (value instanceof Instant at) {
          dialect.setInstant(p, i, at);
        } else if (value instanceof UUID id) {
          dialect.setUuid(p, i, id);
        } else {
          p.setObject(i, value);
        }
      }
    }
    return i;
  }

  private String condition(Class<?> type, String test) {
    return "(" + dialect.nullableParameter(type) + " IS NULL OR " + test + ")";
  }
}
