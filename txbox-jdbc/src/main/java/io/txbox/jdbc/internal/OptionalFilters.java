package io.txbox.jdbc.internal;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.time.ZoneOffset;

/**
 * Binds the values of a scope whose every condition reads {@code (?::type IS NULL OR column = ?)}:
 * each value twice, so that a null one matches anything. Dead letters and replays select this way.
 */
public final class OptionalFilters {
  private OptionalFilters() {}

  /**
   * Binds each of {@code values} to two parameters from {@code first} on; an {@link Instant}
   * becomes a timestamp in UTC.
   *
   * @return the next parameter
   */
  public static int bind(PreparedStatement p, int first, Object... values) throws SQLException {
    int i = first;
    for (Object value : values) {
      Object bound = value instanceof Instant instant ? instant.atOffset(ZoneOffset.UTC) : value;
      p.setObject(i++, bound);
      p.setObject(i++, bound);
    }
    return i;
  }
}
