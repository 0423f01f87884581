package io.txbox.internal;

import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Splits a batch over the due buckets. Buckets that had events last round share the batch; the
 * others are probed with a small limit. One read then never returns more than about twice the
 * batch size, yet a single busy bucket still gets whole batches.
 */
final class RoundPlan {
  private final int batchSize;
  private Set<Integer> busy = Set.of();

  RoundPlan(int batchSize) {
    this.batchSize = batchSize;
  }

  List<BucketRead> reads(List<BucketState> due) {
    long busyDue = due.stream().filter(s -> busy.contains(s.bucket())).count();
    int probe = Math.max(1, batchSize / due.size());
    int share = busyDue == 0 ? probe : (int) Math.max(1, batchSize / busyDue);
    return due.stream()
        .map(s -> new BucketRead(s.bucket(), s.checkpoint(), busy.contains(s.bucket()) ? share : probe))
        .toList();
  }

  /** Remembers which buckets returned events, to plan the next round. */
  void rememberBusy(Set<Integer> bucketsWithEvents) {
    busy = new HashSet<>(bucketsWithEvents);
  }
}
