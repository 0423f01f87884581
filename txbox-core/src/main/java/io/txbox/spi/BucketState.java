package io.txbox.spi;

import java.time.Instant;

/**
 * A bucket of a subscription as its owner sees it: how far it has been relayed and whether it is
 * waiting to retry a failed event.
 *
 * <pre>{@code
 * List<BucketState> mine = store.claimBuckets("kafka", instance, 8, Duration.ofSeconds(10));
 * }</pre>
 *
 * @param bucket the bucket number, 0 to bucket count - 1
 * @param checkpoint the last event relayed (or dead-lettered)
 * @param attempts failed attempts at the event after the checkpoint
 * @param nextAttemptAt when the bucket may be read again, or {@code null} for now
 */
public record BucketState(int bucket, Checkpoint checkpoint, int attempts, Instant nextAttemptAt) {}
