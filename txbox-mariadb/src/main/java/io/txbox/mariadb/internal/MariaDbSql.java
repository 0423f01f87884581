package io.txbox.mariadb.internal;

import io.txbox.jdbc.StoreStatus;
import io.txbox.jdbc.spi.JanitorSql;
import io.txbox.jdbc.spi.JdbcJanitorStore;
import io.txbox.jdbc.spi.RelaySql;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The SQL of the MariaDB store, rendered once for one table prefix. Times are UTC
 * {@code DATETIME(6)} values, compared with {@code UTC_TIMESTAMP(6)}, so that no session's time
 * zone changes what a lease or a delay means.
 */
public record MariaDbSql(
    RelaySql relay,
    String newestPosition,
    String positionsAfter,
    String openEpoch,
    String olderEpochs,
    String lockEpochs,
    String deleteEpochs,
    String idleBuckets,
    String writtenPerMinute) {

  /** The time every table holds: UTC, to the microsecond. */
  static final String NOW = "UTC_TIMESTAMP(6)";
  private static final String LEASE = NOW + " + INTERVAL ? MICROSECOND";

  /** Renders every statement for {@code tables}. */
  public static MariaDbSql of(MariaDbTables t) {
    return new MariaDbSql(
        relay(t),
        t.render("SELECT COALESCE(MAX(position), 0) FROM {outbox}"),
        t.render("SELECT position FROM {outbox} WHERE position > ? ORDER BY position LIMIT ?"),
        t.render("INSERT INTO {writer_epoch} () VALUES ()"),
        t.render("SELECT epoch FROM {writer_epoch} WHERE epoch < ?"),
        t.render("SELECT epoch FROM {writer_epoch} WHERE epoch IN (%s) FOR UPDATE SKIP LOCKED"),
        t.render("DELETE FROM {writer_epoch} WHERE epoch IN (%s)"),
        idleBuckets(t),
        // A scan of the log's last minutes: the janitor keeps the log short, so this stays cheap.
        t.render("SELECT TIMESTAMP(DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:00')) AS minute, COUNT(*) FROM {outbox}"
            + " WHERE created_at >= TIMESTAMP(DATE_FORMAT(" + NOW + ", '%Y-%m-%d %H:%i:00')) - INTERVAL ? MINUTE"
            + " GROUP BY minute ORDER BY minute"));
  }

  /** The relay's statements, in the order and with the parameters {@link RelaySql} gives. */
  private static RelaySql relay(MariaDbTables t) {
    return new RelaySql(
        t.render("INSERT INTO {outbox} (id, `key`, type, version, destination, payload, content_type,"
            + " headers, created_at, available_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
        t.render("SELECT value FROM {setting} WHERE name = ?"),
        t.render("INSERT IGNORE INTO {subscription} (subscription, bucket) VALUES (?, ?)"),
        // The heartbeat touches rows by their key only, never a range: see JdbcRelayStore.
        t.render("UPDATE {relay_instance} SET alive_until = " + LEASE + " WHERE subscription = ? AND instance = ?"),
        t.render("INSERT INTO {relay_instance} (subscription, instance, alive_until) VALUES (?, ?, " + LEASE + ")"
            + " ON DUPLICATE KEY UPDATE alive_until = VALUES(alive_until)"),
        t.render("SELECT instance FROM {relay_instance}"
            + " WHERE subscription = ? AND alive_until < " + NOW + " - INTERVAL 1 HOUR"),
        t.render("DELETE FROM {relay_instance}"
            + " WHERE subscription = ? AND instance = ? AND alive_until < " + NOW + " - INTERVAL 1 HOUR"),
        t.render("SELECT instance FROM {relay_instance}"
            + " WHERE subscription = ? AND alive_until > " + NOW + " ORDER BY instance"),
        t.render("UPDATE {subscription} SET lease_until = " + LEASE + " WHERE subscription = ? AND owner = ?"),
        t.render("SELECT bucket FROM {subscription} WHERE subscription = ? AND owner = ?"),
        t.render("SELECT bucket, position, attempts, next_attempt_at, owner FROM {subscription}"
            + " WHERE subscription = ? AND (owner IS NULL OR lease_until < " + NOW + ")"
            + " ORDER BY bucket LIMIT ? FOR UPDATE SKIP LOCKED"),
        t.render("UPDATE {subscription} SET owner = ?, lease_until = " + LEASE
            + " WHERE subscription = ? AND bucket IN (%s)"),
        t.render("UPDATE {subscription} SET owner = NULL, lease_until = NULL"
            + " WHERE subscription = ? AND owner = ? AND bucket = ?"),
        t.render("UPDATE {subscription} SET owner = NULL, lease_until = NULL WHERE subscription = ? AND owner = ?"),
        t.render("DELETE FROM {relay_instance} WHERE subscription = ? AND instance = ?"),
        t.render("UPDATE {relay_instance} SET fences = fences + 1, last_fenced_at = " + NOW
            + " WHERE subscription = ? AND instance = ?"),
        // One bucket's unread events up to the horizon: a range of the clustered key.
        t.render("(SELECT bucket, position, id, `key`, type, version, destination, payload, content_type,"
            + " headers, created_at, available_at FROM {outbox}"
            + " WHERE bucket = ? AND position > ? AND position <= ? ORDER BY position LIMIT ?)"),
        // The lease must still run in the database too: a relay whose lease expired saves
        // nothing, even before another instance claimed the bucket.
        t.render("UPDATE {subscription} SET position = ?, attempts = ?, next_attempt_at = ?, last_error = ?,"
            + " updated_at = " + NOW
            + " WHERE subscription = ? AND bucket = ? AND owner = ? AND lease_until > " + NOW),
        t.render("INSERT INTO {dead_letter} (subscription, position, id, bucket, `key`, type, version,"
            + " destination, payload, content_type, headers, created_at, error, attempts)"
            + " SELECT ?, o.position, o.id, o.bucket, o.`key`, o.type, o.version, o.destination, o.payload,"
            + " o.content_type, o.headers, o.created_at, ?, ?"
            + " FROM {outbox} o WHERE o.bucket = ? AND o.position = ?"
            + " ON DUPLICATE KEY UPDATE attempts = attempts"));
  }

  /**
   * The janitor's statements, run at {@code READ COMMITTED} ({@link JdbcJanitorStore} says why).
   * The janitor's turn is a row lock on the bucket count, a row every outbox has.
   */
  public static JanitorSql janitor(MariaDbTables t) {
    String older = " < " + NOW + " - INTERVAL ? MICROSECOND";
    return new JanitorSql(
        t.render("SELECT name FROM {setting} WHERE name = 'bucket_count' FOR UPDATE SKIP LOCKED"),
        t.render("SELECT bucket, MIN(position) FROM {subscription} GROUP BY bucket"),
        t.render("SELECT created_at" + older + " OR created_at > " + NOW
            + " FROM {outbox} WHERE bucket = ? AND position <= ? ORDER BY position LIMIT 1"),
        t.render("SELECT MAX(position) FROM (SELECT position FROM {outbox}"
            + " WHERE bucket = ? AND position <= ? ORDER BY position LIMIT ?) AS w"),
        t.render("DELETE FROM {outbox} WHERE bucket = ? AND position <= ? AND created_at" + older),
        t.render("DELETE FROM {inbox} WHERE received_at" + older
            + " AND status NOT IN ('queued', 'dead', 'parked') ORDER BY received_at LIMIT ?"));
  }

  /**
   * The first event each held bucket would read next, when it has been due longer than the limit
   * while the checkpoint stood still. Unlike PostgreSQL's, this cannot leave out an event that an
   * open writer legitimately holds back; the status then lists that writer beside it.
   */
  private static String idleBuckets(MariaDbTables t) {
    String limit = NOW + " - INTERVAL " + StoreStatus.NOT_MOVING_AFTER.toSeconds() + " SECOND";
    return t.render("SELECT s.subscription, s.bucket, s.owner, s.updated_at FROM {subscription} s"
        + " WHERE s.owner IS NOT NULL AND s.lease_until > " + NOW + " AND s.last_error IS NULL AND s.updated_at < " + limit
        + " AND (SELECT GREATEST(o.created_at, COALESCE(o.available_at, o.created_at)) FROM {outbox} o"
        + "   WHERE o.bucket = s.bucket AND o.position > s.position ORDER BY o.position LIMIT 1) < " + limit
        + " ORDER BY s.subscription, s.bucket LIMIT " + StoreStatus.MAX_IDLE_BUCKETS);
  }

  /** Locks the epochs named that no writer holds, leaving out at once those one does. */
  public String lockEpochs(List<Long> epochs) {
    return lockEpochs.formatted(numbers(epochs));
  }

  /** Deletes the epochs named, once locked. */
  public String deleteEpochs(List<Long> epochs) {
    return deleteEpochs.formatted(numbers(epochs));
  }

  private static String numbers(List<? extends Number> values) {
    return values.stream().map(String::valueOf).collect(Collectors.joining(", "));
  }
}
