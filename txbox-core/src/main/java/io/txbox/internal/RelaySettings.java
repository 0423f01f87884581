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
    RetryPolicy retryPolicy) {}
