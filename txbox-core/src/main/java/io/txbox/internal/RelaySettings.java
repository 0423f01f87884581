package io.txbox.internal;

import io.txbox.RetryPolicy;
import java.time.Duration;

/** The validated settings of one relay, as built by {@link io.txbox.Relay.Builder}. */
public record RelaySettings(
    String subscription,
    String instanceId,
    int batchSize,
    Duration idleInterval,
    Duration heartbeatInterval,
    Duration leaseDuration,
    Duration drainTimeout,
    Duration stallWarning,
    RetryPolicy retryPolicy) {

  /**
   * How long after a lease was claimed or renewed (counted from when the statement was sent) the
   * relay still acts for the bucket: the lease less a fifth, a margin for clock rates and for the
   * time a send takes once started.
   */
  public Duration leaseValidity() {
    return leaseDuration.minus(leaseDuration.dividedBy(5));
  }
}
