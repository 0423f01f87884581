package io.txbox.mariadb.internal;

import io.txbox.jdbc.Scope;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.util.UUID;

/**
 * A {@link Scope} as SQL conditions on MariaDB, each {@code (? IS NULL OR condition)}: each value
 * is bound twice, so that a null one matches anything. Dead letters and replays select this way.
 */
final class MariaDbScope {
  private MariaDbScope() {}

  /**
   * The conditions on the dead letter table: the subscription, the event's columns, when it was
   * dead-lettered and its error.
   */
  static String deadLetterConditions() {
    return " (? IS NULL OR subscription = ?) AND " + eventConditions("", "dead_lettered_at")
        + " AND (? IS NULL OR LOCATE(?, error) > 0)";
  }

  /**
   * The conditions on an event's columns, prefixed with {@code alias}: destination, type, key,
   * {@code time} in the period, position and id.
   */
  static String eventConditions(String alias, String time) {
    return "(? IS NULL OR " + alias + "destination = ?) AND (? IS NULL OR " + alias + "type = ?)"
        + " AND (? IS NULL OR " + alias + "`key` = ?)"
        + " AND (? IS NULL OR " + alias + time + " >= ?) AND (? IS NULL OR " + alias + time + " < ?)"
        + " AND (? IS NULL OR " + alias + "position >= ?) AND (? IS NULL OR " + alias + "position <= ?)"
        + " AND (? IS NULL OR " + alias + "id = ?)";
  }

  /** Binds {@link #deadLetterConditions()} from {@code first}; returns the next parameter. */
  static int bindDeadLetters(PreparedStatement p, int first, Scope scope) throws SQLException {
    int next = bind(p, first, scope.subscription());
    next = bindEvent(p, next, scope);
    return bind(p, next, scope.errorContaining());
  }

  /** Binds {@link #eventConditions} from {@code first}; returns the next parameter. */
  static int bindEvent(PreparedStatement p, int first, Scope scope) throws SQLException {
    return bind(p, first, scope.destination(), scope.type(), scope.key(), scope.since(), scope.until(),
        scope.fromPosition(), scope.toPosition(), scope.id());
  }

  /** Each value to two parameters; an instant as the UTC time the tables hold, an id as its text. */
  static int bind(PreparedStatement p, int first, Object... values) throws SQLException {
    int i = first;
    for (Object value : values) {
      Object bound = value instanceof Instant instant ? MariaDbRows.utc(instant)
          : value instanceof UUID id ? id.toString() : value;
      p.setObject(i++, bound);
      p.setObject(i++, bound);
    }
    return i;
  }
}
