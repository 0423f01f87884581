package io.txbox.jdbc.spi;

import java.util.Collections;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The statements of a {@link JdbcRelayStore}, in one database's SQL for one store's tables. Each
 * does one thing a database without {@code RETURNING} or arrays can do in one statement; the
 * parameters are bound in the order given here. Times are compared with the database's own
 * clock, never the relay's; a lease is bound as a number of microseconds.
 *
 * <pre>{@code
 * RelaySql sql = new RelaySql(tables.render("INSERT INTO {outbox} ..."), ...);
 * }</pre>
 *
 * @param append inserts one event: id, key, type, version, destination, payload, content type,
 *     headers as JSON text, created at, available at (null for now)
 * @param setting one row whose one column is the value of one of txbox's settings, as text, or
 *     none: the setting's name ({@code bucket_count}, {@code outbox_id})
 * @param createBucket adds the row of (subscription, bucket), leaving one that is there
 * @param touchInstance renews an instance's row: lease, subscription, instance; changes no row
 *     when there is none
 * @param joinInstance adds an instance's row, or renews it: subscription, instance, lease
 * @param deadInstances the instances of a subscription dead for longer than an hour: subscription
 * @param forgetDeadInstance deletes one of them if it is still dead: subscription, instance
 * @param liveInstances the live instances of a subscription, in order: subscription
 * @param renewLeases renews every lease an instance holds: lease, subscription, instance
 * @param ownedBuckets the buckets an instance holds: subscription, instance
 * @param claimableBuckets locks, skipping any that are locked, at most {@code max} buckets that no
 *     live lease holds, in bucket order, with columns {@code bucket}, {@code position},
 *     {@code attempts}, {@code next_attempt_at} and {@code owner} (whose lease ran out, or null):
 *     subscription, max
 * @param takeBuckets leases the buckets named in place of its {@code %s}: instance, lease,
 *     subscription
 * @param releaseBuckets gives one bucket back: subscription, instance, bucket
 * @param releaseAll gives every bucket of an instance back: subscription, instance
 * @param removeInstance deletes an instance's row: subscription, instance
 * @param recordFence counts one more fence on an instance's row and sets its {@code last_fenced_at}
 *     to now: subscription, instance
 * @param readBucket one bucket's events after a position, up to a position, in order, at most a
 *     limit, in parentheses so that reads of several buckets join with {@code UNION ALL}; columns
 *     bucket, position, then the ten columns {@link SqlDialect#message} maps: bucket, after, up to,
 *     limit
 * @param saveProgress saves one bucket's checkpoint while the instance's lease runs in the
 *     database: position, attempts, next attempt at, last error, subscription, bucket, instance
 * @param deadLetter copies an event to the dead letters, keeping a letter already there:
 *     subscription, error, attempts, bucket, position
 */
public record RelaySql(
    String append,
    String setting,
    String createBucket,
    String touchInstance,
    String joinInstance,
    String deadInstances,
    String forgetDeadInstance,
    String liveInstances,
    String renewLeases,
    String ownedBuckets,
    String claimableBuckets,
    String takeBuckets,
    String releaseBuckets,
    String releaseAll,
    String removeInstance,
    String recordFence,
    String readBucket,
    String saveProgress,
    String deadLetter) {

  /** The read of {@code buckets} buckets at once: one range per bucket, four parameters each. */
  public String read(int buckets) {
    return String.join(" UNION ALL ", Collections.nCopies(buckets, readBucket));
  }

  /** {@link #takeBuckets} for {@code buckets}, written into the text as numbers. */
  public String takeBuckets(List<Integer> buckets) {
    return takeBuckets.formatted(buckets.stream().map(String::valueOf).collect(Collectors.joining(", ")));
  }
}
