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
 * @param previousOwner as returned by a claim: the member whose lease on the bucket had run out,
 *     whom exactly-once delivery fences at the broker; {@code null} when the bucket had no owner
 *     (released, or never claimed) and everywhere else
 */
public record BucketState(int bucket, Checkpoint checkpoint, int attempts, Instant nextAttemptAt,
    String previousOwner) {
  /** A bucket's state with no previous owner. */
  public BucketState(int bucket, Checkpoint checkpoint, int attempts, Instant nextAttemptAt) {
    this(bucket, checkpoint, attempts, nextAttemptAt, null);
  }

  /** This state with {@code checkpoint} instead, as read back from the broker. */
  public BucketState withCheckpoint(Checkpoint checkpoint) {
    return new BucketState(bucket, checkpoint, attempts, nextAttemptAt, previousOwner);
  }
}
