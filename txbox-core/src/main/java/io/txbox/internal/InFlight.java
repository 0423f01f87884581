package io.txbox.internal;

import io.txbox.spi.PublishResult;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/**
 * A batch handed to the publisher and not yet settled: what was sent per bucket lease, which
 * buckets a delayed event stopped, and the broker's answer to come.
 */
record InFlight(
    Map<OwnedBuckets.Lease, List<RoundOutcome.Sent>> sent,
    Map<OwnedBuckets.Lease, Instant> heldUntil,
    int size,
    Instant readAt,
    Future<PublishResult> result) {

  /** Waits for the broker's answer; a publisher that died counts as every message failing. */
  PublishResult await() throws InterruptedException {
    try {
      return result.get();
    } catch (ExecutionException e) {
      Exception cause = e.getCause() instanceof Exception c ? c : e;
      return PublishResult.allFailed(size, cause);
    }
  }
}
