package io.txbox.demo;

import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * What the demo proved, read from the database after everything stopped: the order service's
 * {@code orders}, the inventory service's {@code reservation} and {@code stock}, and the counts
 * the subscribers reported.
 *
 * @param written orders placed, each with its {@code OrderPlaced} event
 * @param delivered events the subscribers received: {@code applied + duplicates}
 * @param duplicates redeliveries the inbox recognised and did not hand to the handler, as the
 *     subscribers counted them; a killed subscriber's last 200 ms of counts die with it
 * @param applied orders with a stock reservation
 * @param lost orders without one
 * @param appliedTwice reservations beyond the first for an order
 * @param orderViolations reservations applied out of their SKU's order
 * @param wrongStockLevels SKUs whose reserved stock differs from their orders' quantities
 * @param kills processes SIGKILLed by chaos
 * @param measured orders placed after the warm-up, which the rates and the latency describe
 * @param writeSeconds time the order service took to place them
 * @param totalSeconds time from the first of them placed to the last reserved
 * @param latency business commit to handler commit of each, in milliseconds
 * @param exactCommitTimes whether {@code latency} comes from commit timestamps (else from the
 *     statements' clock times, a little shorter)
 */
record DemoReport(long written, long delivered, long duplicates, long applied, long lost, long appliedTwice,
    long orderViolations, long wrongStockLevels, int kills, long measured, double writeSeconds, double totalSeconds,
    Latency latency, boolean exactCommitTimes) {

  /** Percentiles in milliseconds. */
  record Latency(double p50, double p95, double p99, double max) {}

  /** Every invariant held: nothing lost, nothing applied twice, every SKU in order. */
  boolean ok() {
    return lost == 0 && appliedTwice == 0 && orderViolations == 0 && wrongStockLevels == 0;
  }

  /**
   * Reads the report. {@code measuredSince} is an SQL expression of the database's own clock
   * ({@link Demo}'s {@code databaseNow}), {@code mariaDb} says whose SQL to speak.
   */
  static DemoReport read(DataSource ds, String schema, boolean mariaDb, int kills, String measuredSince,
      double writeSeconds) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      String since = measuredSince;
      boolean exact = !mariaDb && "on".equals(single(s, "SELECT current_setting('track_commit_timestamp')"));
      String placed = exact ? "pg_xact_commit_timestamp(o.xmin)" : "o.placed_at";
      String reserved = exact ? "pg_xact_commit_timestamp(r.xmin)" : "r.reserved_at";
      long written = count(s, "SELECT count(*) FROM " + schema + ".orders");
      long reservations = count(s, "SELECT count(*) FROM " + schema + ".reservation");
      long applied = count(s, "SELECT count(DISTINCT order_id) FROM " + schema + ".reservation");
      String lastReserved = "(SELECT max(reserved_at) FROM " + schema + ".reservation)";
      try (ResultSet rs = s.executeQuery("SELECT 0, coalesce(sum(duplicates), 0) FROM "
          + schema + ".subscriber_stats")) {
        rs.next();
        long delivered = applied + rs.getLong(2);
        return new DemoReport(written, delivered, rs.getLong(2), applied,
            count(s, "SELECT count(*) FROM " + schema + ".orders o WHERE NOT EXISTS (SELECT 1 FROM " + schema
                + ".reservation r WHERE r.order_id = o.id)"),
            reservations - applied,
            count(s, "SELECT count(*) FROM " + schema + ".reservation WHERE NOT in_order"),
            count(s, "SELECT count(*) FROM " + schema + ".stock s WHERE s.reserved <> (SELECT coalesce(sum(quantity), 0)"
                + " FROM " + schema + ".orders o WHERE o.sku = s.sku)"),
            kills,
            count(s, "SELECT count(*) FROM " + schema + ".orders WHERE placed_at >= " + since),
            writeSeconds,
            seconds(s, "SELECT " + millisBetween(mariaDb, since, lastReserved) + " / 1000"),
            latency(c, schema, mariaDb, millisBetween(mariaDb, placed, reserved), since), exact);
      }
    }
  }

  /** Milliseconds from {@code from} to {@code to}, both times, in the database's SQL. */
  private static String millisBetween(boolean mariaDb, String from, String to) {
    return mariaDb ? "TIMESTAMPDIFF(MICROSECOND, " + from + ", " + to + ") / 1000"
        : "extract(epoch FROM (" + to + " - " + from + ")) * 1000";
  }

  private static Latency latency(Connection c, String schema, boolean mariaDb, String ms, String since)
      throws SQLException {
    String rows = " FROM (SELECT " + ms + " AS ms FROM " + schema + ".reservation r JOIN " + schema
        + ".orders o ON o.id = r.order_id WHERE o.placed_at >= " + since + ") x";
    // MariaDB has the percentiles as window functions only: one row per reservation, all alike.
    String query = mariaDb
        ? "SELECT DISTINCT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) OVER (),"
            + " percentile_cont(0.95) WITHIN GROUP (ORDER BY ms) OVER (),"
            + " percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) OVER (), max(ms) OVER ()" + rows
        : "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), percentile_cont(0.95) WITHIN GROUP (ORDER BY ms),"
            + " percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), max(ms)" + rows;
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(query)) {
      return rs.next() ? new Latency(rs.getDouble(1), rs.getDouble(2), rs.getDouble(3), rs.getDouble(4))
          : new Latency(0, 0, 0, 0);
    }
  }

  void print(PrintStream out) {
    out.printf("%n%-34s %,12d%n", "events written", written);
    out.printf("%-34s %,12d%n", "delivered to subscribers", delivered);
    out.printf("%-34s %,12d%n", "duplicates absorbed by the inbox", duplicates);
    out.printf("%-34s %,12d%n", "side effects applied", applied);
    out.printf("%-34s %,12d%s%n", "lost", lost, mark(lost));
    out.printf("%-34s %,12d%s%n", "applied twice", appliedTwice, mark(appliedTwice));
    out.printf("%-34s %,12d%s%n", "order violations (per SKU)", orderViolations, mark(orderViolations));
    out.printf("%-34s %,12d%s%n", "wrong stock levels (SKUs)", wrongStockLevels, mark(wrongStockLevels));
    out.printf("%-34s %,12d%n", "processes killed (SIGKILL)", kills);
    out.printf("%-34s %,12.0f events/s (%,d orders after the warm-up in %.1f s)%n", "order service throughput",
        measured / writeSeconds, measured, writeSeconds);
    out.printf("%-34s %,12.0f events/s (%.1f s to the last reservation)%n", "end to end",
        measured / totalSeconds, totalSeconds);
    out.printf("%-34s p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms%n",
        exactCommitTimes ? "commit to handler commit" : "write to handler write", latency.p50(), latency.p95(),
        latency.p99(), latency.max());
    out.println(ok() ? "\nOK: every order reserved stock exactly once, in order per SKU."
        : "\nFAILED: an invariant broke; see the lines marked above.");
  }

  private static String mark(long n) {
    return n == 0 ? "" : "   <-- must be 0";
  }

  private static long count(Statement s, String sql) throws SQLException {
    return Long.parseLong(single(s, sql));
  }

  private static double seconds(Statement s, String sql) throws SQLException {
    String v = single(s, sql);
    return v == null ? 0 : Double.parseDouble(v);
  }

  private static String single(Statement s, String sql) throws SQLException {
    try (ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
