package io.txbox.spi;

import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a relay round did to a bucket: its new checkpoint, and its retry state.
 *
 * <pre>{@code
 * new BucketProgress(3, new Checkpoint(812, 40_117), 0, null, null); // relayed, no failure
 * }</pre>
 *
 * @param bucket the bucket
 * @param checkpoint the last event relayed or dead-lettered
 * @param attempts failed attempts at the next event, 0 when none failed
 * @param nextAttemptAt when to try the next event again, or {@code null} for now
 * @param lastError the last failure, or {@code null}
 */
public record BucketProgress(
    int bucket, Checkpoint checkpoint, int attempts, Instant nextAttemptAt, String lastError) {

  /**
   * The buckets of {@code progress} that are not in {@code saved}: what
   * {@link RelayStore#saveProgress} returns, the buckets whose lease the instance no longer held.
   */
  public static Set<Integer> unsaved(List<BucketProgress> progress, Set<Integer> saved) {
    Set<Integer> lost = new TreeSet<>();
    progress.forEach(p -> lost.add(p.bucket()));
    lost.removeAll(saved);
    return lost;
  }
}
