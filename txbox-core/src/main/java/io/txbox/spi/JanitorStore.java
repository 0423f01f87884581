package io.txbox.spi;

import java.time.Duration;
import java.util.OptionalInt;

/**
 * Deletes what no one needs any more, a bounded batch per call, each in its own short
 * transaction. Only one caller at a time across all instances does the work: the others are told
 * so and skip.
 *
 * <pre>{@code
 * OptionalInt deleted = store.deleteRelayed(Duration.ofDays(7), 5_000);
 * }</pre>
 */
public interface JanitorStore {

  /**
   * Deletes up to {@code limit} outbox events that every subscription has relayed and that are
   * older than {@code retention}. A store that keeps its log in partitions may drop whole
   * partitions of such events instead, and then report more than {@code limit}.
   *
   * @return how many were deleted, or empty when another janitor holds the lock
   */
  OptionalInt deleteRelayed(Duration retention, int limit);

  /**
   * Deletes up to {@code limit} inbox records older than {@code retention}.
   *
   * @return how many were deleted, or empty when another janitor holds the lock
   */
  OptionalInt deleteInboxRecords(Duration retention, int limit);
}
