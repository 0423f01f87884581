package io.txbox.cdc.internal;

import io.txbox.Delivery;
import io.txbox.RetryPolicy;
import io.txbox.postgres.PostgresTables;
import java.time.Duration;
import java.util.Properties;

/** A logical relay's checked settings. */
public record StreamSettings(
    String jdbcUrl,
    Properties connectionProperties,
    String slot,
    String publication,
    String messagePrefix,
    PostgresTables tables,
    int batchSize,
    int maxPending,
    Duration idleInterval,
    Duration statusInterval,
    Duration standbyInterval,
    Duration drainTimeout,
    Duration checkpointInterval,
    Duration waitWarning,
    RetryPolicy retryPolicy,
    Delivery delivery) {}
