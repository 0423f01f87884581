package io.txbox.jdbc.spi;

/**
 * The statements of a {@link JdbcJanitorStore}, in one database's SQL for one store's tables; the
 * parameters are bound in the order given here, a retention as a number of microseconds, and
 * times are compared with the database's own clock.
 *
 * <pre>{@code
 * JanitorSql sql = new JanitorSql(tables.render("SELECT name FROM {setting} ... FOR UPDATE SKIP LOCKED"), ...);
 * }</pre>
 *
 * @param takeTurn one row if this transaction takes the janitor's turn, none if another janitor
 *     has it: a row lock tried, never waited for, on a row every outbox has
 * @param lowestCheckpoints each bucket and the lowest checkpoint any subscription has in it
 * @param headIsDue whether a bucket's oldest relayed event is past the retention or dated in the
 *     future (which must not keep the bucket from being looked at): retention, bucket, checkpoint
 * @param windowEnd the highest position among a bucket's first relayed events, null for none:
 *     bucket, checkpoint, how many
 * @param deleteRelayed deletes a bucket's events up to a position that are past the retention:
 *     bucket, position, retention
 * @param deleteInboxRecords deletes inbox records past the retention, oldest first, at most a
 *     limit, keeping those of messages still queued, dead or parked: retention, limit
 */
public record JanitorSql(
    String takeTurn,
    String lowestCheckpoints,
    String headIsDue,
    String windowEnd,
    String deleteRelayed,
    String deleteInboxRecords) {}
