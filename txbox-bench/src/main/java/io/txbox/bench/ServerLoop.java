package io.txbox.bench;

import java.sql.SQLException;

/**
 * What one PL/pgSQL statement costs inside the server, timed there by a loop that runs it many
 * times in one transaction: CPU alone, with no round trip, no commit and no WAL flush, which bind
 * a writer's transactions per second on these machines and hide a microsecond.
 *
 * <pre>{@code
 * long nanos = ServerLoop.nanosPerCall(db, "l pg_lsn;", "l := pg_logical_emit_message(true, 'p', '\\x00');", 100_000);
 * }</pre>
 */
final class ServerLoop {
  private ServerLoop() {}

  /**
   * Nanoseconds per turn of a loop of {@code calls} turns that runs {@code statement}, which may
   * use the loop's counter {@code i} and the variables {@code declarations} declares.
   */
  static long nanosPerCall(BenchDatabase db, String declarations, String statement, int calls) throws SQLException {
    String loop = BenchDatabase.SCHEMA + ".server_loop";
    db.execute("CREATE OR REPLACE FUNCTION " + loop + "(n int) RETURNS bigint LANGUAGE plpgsql AS $f$ DECLARE "
        + declarations + " t0 timestamptz; BEGIN t0 := clock_timestamp(); FOR i IN 1..n LOOP " + statement
        + " END LOOP; RETURN (extract(epoch FROM clock_timestamp() - t0) * 1e9 / n)::bigint; END $f$");
    try {
      return db.queryLong("SELECT " + loop + "(" + calls + ")");
    } finally {
      db.execute("DROP FUNCTION " + loop + "(int)");
    }
  }
}
