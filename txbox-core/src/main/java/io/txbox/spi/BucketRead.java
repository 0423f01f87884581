package io.txbox.spi;

/**
 * One bucket's part of a read: events after {@code after}, at most {@code limit} of them.
 *
 * <pre>{@code
 * store.read("kafka", List.of(new BucketRead(3, Checkpoint.START, 500)));
 * }</pre>
 *
 * @param bucket the bucket
 * @param after the bucket's checkpoint
 * @param limit the most events to return for this bucket, 1 or more
 */
public record BucketRead(int bucket, Checkpoint after, int limit) {}
