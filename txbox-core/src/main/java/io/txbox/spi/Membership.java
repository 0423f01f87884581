package io.txbox.spi;

import java.util.List;
import java.util.Set;

/**
 * What a relay instance learns from a heartbeat: who else is alive, and which buckets it still
 * holds.
 *
 * <pre>{@code
 * Membership m = store.heartbeat("kafka", instance, Duration.ofSeconds(10));
 * int share = 64 / m.liveInstances().size();
 * }</pre>
 *
 * @param liveInstances the live instances of the subscription, sorted, this one included
 * @param ownedBuckets the buckets whose lease this instance renewed
 */
public record Membership(List<String> liveInstances, Set<Integer> ownedBuckets) {
  /** Copies both collections. */
  public Membership {
    liveInstances = List.copyOf(liveInstances);
    ownedBuckets = Set.copyOf(ownedBuckets);
  }
}
