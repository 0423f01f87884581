package io.txbox.internal;

import io.txbox.Delivery;
import io.txbox.RetryPolicy;
import java.time.Duration;

/**
 * The validated settings of one relay, as built by {@link io.txbox.Relay.Builder}.
 *
 * @param member the name this relay process is known by in the subscription: it holds its leases
 *     and beats under it. The instance id when that was generated (unique per process already);
 *     an instance id given by the user names a relay, not a process, so a process started again
 *     under it (a StatefulSet pod, a systemd unit) adds a part of its own: its predecessor's
 *     leases are then neither renewed nor used by it, and end on time to be claimed afresh.
 */
public record RelaySettings(
    String subscription,
    String member,
    int batchSize,
    Duration idleInterval,
    Duration heartbeatInterval,
    Duration leaseDuration,
    Duration drainTimeout,
    Duration stallWarning,
    RetryPolicy retryPolicy,
    Delivery delivery) {

  /** Settings for at-least-once delivery. */
  public RelaySettings(String subscription, String member, int batchSize, Duration idleInterval,
      Duration heartbeatInterval, Duration leaseDuration, Duration drainTimeout, Duration stallWarning,
      RetryPolicy retryPolicy) {
    this(subscription, member, batchSize, idleInterval, heartbeatInterval, leaseDuration, drainTimeout,
        stallWarning, retryPolicy, Delivery.AT_LEAST_ONCE);
  }

  /**
   * How long after a lease was claimed or renewed (counted from when the statement was sent) the
   * relay still acts for the bucket: the lease less a fifth, a margin for clock rates and for the
   * time a send takes once started.
   */
  public Duration leaseValidity() {
    return leaseDuration.minus(leaseDuration.dividedBy(5));
  }
}
