package io.txbox.postgres.internal;

import io.txbox.postgres.PostgresTables;

/** The SQL of the PostgreSQL store, rendered once for one schema and table prefix. */
public record PostgresSql(
    String append,
    String wakeRelays,
    String createBuckets,
    String touchInstance,
    String forgetDeadInstances,
    String liveInstances,
    String renewLeases,
    String claimBuckets,
    String releaseBuckets,
    String releaseAll,
    String removeInstance,
    String recordFence,
    String read,
    String saveProgress,
    String deadLetter,
    String deadLetterCopy,
    String oldestOpenTransaction,
    String backlog,
    String deleteRelayed,
    String deleteInboxRecords) {

  /**
   * The read horizon of snapshot {@code s}: every transaction id below it has ended, except those
   * of other databases. Transaction ids are the cluster's, so the snapshot's own xmin waits for
   * every open transaction of every database; but only a transaction of this database can write
   * to this outbox, so one that {@code pg_stat_activity} (or {@code pg_prepared_xacts}) places in
   * another database holds nothing back. An open one it cannot place (a server process of no
   * database, or one that ended between the snapshot and the look) counts as this database's:
   * attributing wrongly could only wait longer, never skip a row. The snapshot and the look are
   * one statement's, so a row of an id below the horizon is either visible or never to be.
   */
  static final String HORIZON = "(SELECT coalesce(min(x), pg_snapshot_xmax(s)) FROM pg_snapshot_xip(s) AS x"
      + " WHERE x::xid NOT IN ("
      + "   SELECT a.backend_xid FROM pg_stat_get_activity(NULL) AS a WHERE a.backend_xid IS NOT NULL"
      + "     AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database())"
      + "   UNION ALL SELECT p.transaction FROM pg_prepared_xacts AS p WHERE p.database <> current_database()))";

  /** Most characters of the oldest open transaction's query text read. */
  public static final int OPEN_TRANSACTION_QUERY_LENGTH = 200;

  /** Renders every statement for {@code tables}. */
  public static PostgresSql of(PostgresTables t) {
    return new PostgresSql(
        t.render("INSERT INTO {outbox} (id, key, type, version, destination, payload, content_type,"
            + " headers, created_at, available_at)"
            + " VALUES (?, ?, ?, ?, ?, ?, ?, jsonb_object(?::text[], ?::text[]), ?, ?)"),
        "SELECT pg_notify(?, '')",
        t.render("INSERT INTO {subscription} (subscription, bucket)"
            + " SELECT ?, b FROM generate_series(0, ? - 1) AS b ON CONFLICT DO NOTHING"),
        t.render("INSERT INTO {relay_instance} (subscription, instance, alive_until)"
            + " VALUES (?, ?, now() + ? * interval '1 millisecond')"
            + " ON CONFLICT (subscription, instance) DO UPDATE SET alive_until = excluded.alive_until"),
        t.render("DELETE FROM {relay_instance}"
            + " WHERE subscription = ? AND alive_until < now() - interval '1 hour'"),
        t.render("SELECT instance FROM {relay_instance}"
            + " WHERE subscription = ? AND alive_until > now() ORDER BY instance"),
        t.render("UPDATE {subscription} SET lease_until = now() + ? * interval '1 millisecond'"
            + " WHERE subscription = ? AND owner = ? RETURNING bucket"),
        // The FROM list's row is the one before the update: it names the owner whose lease ran out.
        t.render("UPDATE {subscription} s SET owner = ?,"
            + " lease_until = now() + ? * interval '1 millisecond'"
            + " FROM (SELECT bucket, owner FROM {subscription}"
            + "   WHERE subscription = ? AND (owner IS NULL OR lease_until < now())"
            + "   ORDER BY bucket LIMIT ? FOR UPDATE SKIP LOCKED) before"
            + " WHERE s.subscription = ? AND s.bucket = before.bucket"
            + " RETURNING s.bucket, s.tx_id::text AS tx_text, s.position, s.attempts, s.next_attempt_at,"
            + " before.owner AS previous_owner"),
        t.render("UPDATE {subscription} SET owner = NULL, lease_until = NULL"
            + " WHERE subscription = ? AND owner = ? AND bucket = ANY (?::int[])"),
        t.render("UPDATE {subscription} SET owner = NULL, lease_until = NULL"
            + " WHERE subscription = ? AND owner = ?"),
        t.render("DELETE FROM {relay_instance} WHERE subscription = ? AND instance = ?"),
        t.render("UPDATE {relay_instance} SET fences = fences + 1, last_fenced_at = now()"
            + " WHERE subscription = ? AND instance = ?"),
        // Commit-safe read: only rows of transactions below this database's horizon (see
        // HORIZON), which can no longer be joined by an earlier-positioned row that commits late.
        // One index range scan per bucket on the primary key (bucket, tx_id, position), starting
        // at the checkpoint. The converted tx_id must not be aliased tx_id: ORDER BY would sort by
        // the conversion. Columns are read by position in PostgresRows.storedMessage: keep the two
        // in step.
        t.render("WITH h AS MATERIALIZED (SELECT " + HORIZON + " AS horizon FROM pg_current_snapshot() AS s)"
            + " SELECT c.bucket, o.tx_id::text::bigint AS tx_number, o.position, o.id, o.key,"
            + " o.type, o.version, o.destination, o.payload, o.content_type,"
            + " o.headers::text AS headers_json, o.created_at, o.available_at"
            + " FROM h, unnest(?::int[], ?::text[], ?::bigint[], ?::int[]) AS c(bucket, tx, pos, lim)"
            + " CROSS JOIN LATERAL ("
            + "   SELECT * FROM {outbox} o"
            + "   WHERE o.bucket = c.bucket"
            + "     AND (o.tx_id, o.position) > (c.tx::xid8, c.pos)"
            + "     AND o.tx_id < h.horizon"
            + "   ORDER BY o.tx_id, o.position"
            + "   LIMIT c.lim) AS o"),
        t.render("UPDATE {subscription} s SET tx_id = p.tx::xid8, position = p.pos,"
            + " attempts = p.attempts, next_attempt_at = p.next_at::timestamptz, last_error = p.err,"
            + " updated_at = now()"
            + " FROM unnest(?::int[], ?::text[], ?::bigint[], ?::int[], ?::text[], ?::text[])"
            + "   AS p(bucket, tx, pos, attempts, next_at, err)"
            // The lease must still run in the database too: a relay whose lease expired saves
            // nothing, even before another instance claimed the bucket.
            + " WHERE s.subscription = ? AND s.bucket = p.bucket AND s.owner = ?"
            + "   AND s.lease_until > now()"
            + " RETURNING s.bucket"),
        t.render("INSERT INTO {dead_letter} (subscription, position, tx_id, id, bucket, key, type,"
            + " version, destination, payload, content_type, headers, created_at, error, attempts)"
            + " SELECT ?, o.position, o.tx_id, o.id, o.bucket, o.key, o.type, o.version,"
            + " o.destination, o.payload, o.content_type, o.headers, o.created_at, ?, ?"
            + " FROM {outbox} o WHERE o.bucket = ? AND o.tx_id = ?::xid8 AND o.position = ?"
            + " ON CONFLICT (subscription, position) DO NOTHING"),
        // For events that no outbox row holds (WAL messages): the letter carries the whole event.
        t.render("INSERT INTO {dead_letter} (subscription, position, tx_id, id, bucket, key, type,"
            + " version, destination, payload, content_type, headers, created_at, error, attempts)"
            + " VALUES (?, ?, ?::xid8, ?, ?, ?, ?, ?, ?, ?, ?, jsonb_object(?::text[], ?::text[]), ?, ?, ?)"
            + " ON CONFLICT (subscription, position) DO NOTHING"),
        // clock_timestamp, not now(): a transaction that began after this one's start is not "open -28 ms".
        "SELECT pid, greatest(0, extract(epoch FROM clock_timestamp() - xact_start) * 1000)::bigint,"
            + " coalesce(usename, '?'), coalesce(datname, '?'), coalesce(application_name, ''),"
            // A commit that waits for a synchronous standby is "active" to the server: say what it waits for.
            + " CASE WHEN wait_event = 'SyncRep' THEN 'committing, waiting for a synchronous standby"
            + " (synchronous_standby_names)' ELSE coalesce(state, '') END,"
            + " left(coalesce(query, ''), " + OPEN_TRANSACTION_QUERY_LENGTH + ")"
            + " FROM pg_stat_activity"
            + " WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()"
            // Only a transaction of this database can write this outbox, so only such a one (or
            // a server process of no database) holds its relay back: see HORIZON.
            + " AND (datid IS NULL OR datid = (SELECT oid FROM pg_database WHERE datname = current_database()))"
            + " ORDER BY xact_start LIMIT 1",
        // At most a limit of rows per bucket past its checkpoint, on the primary key's range, so
        // that a gauge over a backlog of millions stays cheap; capped says the limit was reached.
        // A subscription no relay opened yet starts at the beginning of the log, in every bucket.
        t.render("SELECT coalesce(sum(b.n), 0), min(b.oldest), coalesce(bool_or(b.n >= ?), false)"
            + " FROM (SELECT bucket, tx_id, position FROM {subscription} WHERE subscription = ?"
            + "   UNION ALL SELECT g::smallint, '0'::xid8, 0 FROM generate_series(0, (SELECT value::int - 1"
            + "     FROM {setting} WHERE name = 'bucket_count')) AS g"
            + "   WHERE NOT EXISTS (SELECT 1 FROM {subscription} WHERE subscription = ?)) AS s CROSS JOIN LATERAL ("
            + "   SELECT count(*) AS n, min(p.created_at) AS oldest FROM ("
            + "     SELECT o.created_at FROM {outbox} o"
            + "     WHERE o.bucket = s.bucket AND (o.tx_id, o.position) > (s.tx_id, s.position)"
            + "     ORDER BY o.tx_id, o.position LIMIT ?) AS p) AS b"),
        deleteRelayedFrom(t, "{outbox}"),
        t.render("DELETE FROM {inbox} WHERE ctid = ANY (ARRAY("
            + " SELECT ctid FROM {inbox} WHERE received_at < now() - ? * interval '1 millisecond'"
            + " AND status NOT IN ('queued', 'dead', 'parked') LIMIT ?))"));
  }

  /**
   * Deletes relayed rows from {@code table}: the outbox, or its default partition. Rows at or
   * below the lowest checkpoint of their bucket over all subscriptions have been relayed by every
   * subscription; any subset of them may go, in any order.
   */
  public static String deleteRelayedFrom(PostgresTables t, String table) {
    String sql = "DELETE FROM {outbox} o USING ("
        + "   SELECT r.bucket, r.tx_id, r.position FROM ("
        + "     SELECT DISTINCT ON (bucket) bucket, tx_id, position FROM {subscription}"
        + "     ORDER BY bucket, tx_id, position) AS low"
        + "   CROSS JOIN LATERAL ("
        + "     SELECT o2.bucket, o2.tx_id, o2.position FROM {outbox} o2"
        + "     WHERE o2.bucket = low.bucket AND (o2.tx_id, o2.position) <= (low.tx_id, low.position)"
        + "       AND o2.created_at < now() - ? * interval '1 millisecond'"
        + "     ORDER BY o2.tx_id, o2.position LIMIT ?) AS r"
        + "   LIMIT ?) AS d"
        + " WHERE o.bucket = d.bucket AND o.tx_id = d.tx_id AND o.position = d.position";
    return t.render(sql.replace("{outbox}", table));
  }
}
