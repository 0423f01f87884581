package io.txbox;

import io.txbox.internal.RelayRuntime;
import io.txbox.internal.RelaySettings;
import io.txbox.spi.Metrics;
import io.txbox.spi.Publisher;
import io.txbox.spi.RelayStore;
import io.txbox.spi.TransactionalPublisher;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * Moves events from the outbox log to a broker, at least once, in order per key.
 *
 * <p>Each round reads committed events after the checkpoints of the buckets this instance owns,
 * publishes them, waits until the broker acknowledged every one, and only then saves the new
 * checkpoints. A crash anywhere re-sends; it never skips. Several instances share a
 * subscription's buckets through leases renewed by a heartbeat; a dead instance's buckets are
 * taken over when its leases expire.
 *
 * <pre>{@code
 * Relay relay = Relay.builder(store, KafkaPublisher.builder().bootstrapServers("kafka:9092").build())
 *     .subscription("kafka")
 *     .batchSize(1000)
 *     .build();
 * relay.start();
 * ...
 * relay.close(); // finishes the current round, then gives the buckets back
 * }</pre>
 *
 * <h2>Settings</h2>
 *
 * <table>
 *   <caption>Relay settings and their defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>range</th></tr>
 *   <tr><td>subscription</td><td>{@value #DEFAULT_SUBSCRIPTION}</td><td>1-64 of {@code A-Z a-z 0-9 . _ -}</td></tr>
 *   <tr><td>batchSize</td><td>{@value #DEFAULT_BATCH_SIZE}</td><td>1 to {@value #MAX_BATCH_SIZE}</td></tr>
 *   <tr><td>idleInterval</td><td>500 ms</td><td>1 ms to 1 h</td></tr>
 *   <tr><td>heartbeatInterval</td><td>1 s</td><td>10 ms to 1 h</td></tr>
 *   <tr><td>leaseDuration</td><td>10 s</td><td>at least 2 × heartbeatInterval, at most 1 h</td></tr>
 *   <tr><td>drainTimeout</td><td>30 s</td><td>0 to 1 h</td></tr>
 *   <tr><td>stallWarning</td><td>30 s</td><td>1 s to 1 d</td></tr>
 *   <tr><td>retryPolicy</td><td>{@link RetryPolicy#defaults()}</td><td></td></tr>
 * </table>
 */
public final class Relay implements AutoCloseable {

  /** Default subscription name. */
  public static final String DEFAULT_SUBSCRIPTION = "default";
  /** Default most events read and published per round. */
  public static final int DEFAULT_BATCH_SIZE = 5000;
  /** Highest accepted batch size. */
  public static final int MAX_BATCH_SIZE = 100_000;
  /** Default longest pause between polls when no events come. */
  public static final Duration DEFAULT_IDLE_INTERVAL = Duration.ofMillis(500);
  /** Default time between heartbeats. */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(1);
  /** Default lease on a bucket; a dead instance's buckets are taken over after it. */
  public static final Duration DEFAULT_LEASE_DURATION = Duration.ofSeconds(10);
  /** Default time {@link #close()} waits for the current round. */
  public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(30);
  /** Default age of an open transaction after which the relay warns that it holds delivery back. */
  public static final Duration DEFAULT_STALL_WARNING = Duration.ofSeconds(30);

  private static final Pattern SUBSCRIPTION = Pattern.compile("[A-Za-z0-9._-]{1,64}");
  private static final Duration HOUR = Duration.ofHours(1);

  private final String instanceId;
  private final RelaySettings settings;
  private final RelayStore store;
  private final Publisher publisher;
  private final Metrics metrics;
  private volatile RelayRuntime runtime;

  private Relay(Builder b) {
    this.instanceId = b.instanceId;
    this.settings = new RelaySettings(
        b.subscription, b.instanceIdGiven ? b.instanceId + "/" + UUID.randomUUID().toString().substring(0, 8)
            : b.instanceId, b.batchSize, b.idleInterval, b.heartbeatInterval,
        b.leaseDuration, b.drainTimeout, b.stallWarning, b.retryPolicy, b.delivery);
    this.store = b.store;
    this.publisher = b.publisher;
    this.metrics = b.metrics;
  }

  /** A builder for a relay from {@code store} to {@code publisher}, with the defaults above. */
  public static Builder builder(RelayStore store, Publisher publisher) {
    return new Builder(store, publisher);
  }

  /**
   * Checks the store (tables, bucket rows), joins the subscription and starts relaying in the
   * background. Throws {@link TxboxException} with what to fix when the store is not usable.
   */
  public synchronized Relay start() {
    if (runtime != null) {
      throw new IllegalStateException("relay " + instanceId + " is already started");
    }
    runtime = RelayRuntime.start(settings, store, publisher, metrics);
    return this;
  }

  /** Whether the relay is started and its loop running. */
  public boolean isRunning() {
    RelayRuntime r = runtime;
    return r != null && r.isAlive();
  }

  /**
   * Whether its last round or heartbeat failed (the database or broker unreachable, a bug); the
   * relay goes on trying. For health checks.
   */
  public boolean isTroubled() {
    RelayRuntime r = runtime;
    return r != null && r.isTroubled();
  }

  /** The buckets this instance owns now; empty when stopped. */
  public Set<Integer> ownedBuckets() {
    RelayRuntime r = runtime;
    return r == null ? Set.of() : r.ownedBuckets();
  }

  /** The subscription this relay serves. */
  public String subscription() {
    return settings.subscription();
  }

  /** This instance's id, as given to {@link Builder#instanceId} or generated. */
  public String instanceId() {
    return instanceId;
  }

  /**
   * The name this relay holds its leases under, which {@code txbox status} lists: the instance id,
   * followed by {@code /} and a part of this relay's own when the id was given (an id names a
   * relay, which a restart keeps; this name, a process).
   */
  public String member() {
    return settings.member();
  }

  /**
   * Stops gracefully: the current round finishes (publish, acks, checkpoint) within the drain
   * timeout, the buckets are given back, and the publisher is closed. Safe to call twice.
   */
  @Override
  public synchronized void close() {
    RelayRuntime r = runtime;
    if (r != null) {
      runtime = null;
      r.stop();
    }
  }

  /** Builds a {@link Relay}; {@link #build()} checks every setting. */
  public static final class Builder {
    private final RelayStore store;
    private final Publisher publisher;
    private String subscription = DEFAULT_SUBSCRIPTION;
    private String instanceId = defaultInstanceId();
    private boolean instanceIdGiven;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private Duration idleInterval = DEFAULT_IDLE_INTERVAL;
    private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
    private Duration leaseDuration = DEFAULT_LEASE_DURATION;
    private Duration drainTimeout = DEFAULT_DRAIN_TIMEOUT;
    private Duration stallWarning = DEFAULT_STALL_WARNING;
    private RetryPolicy retryPolicy = RetryPolicy.defaults();
    private Delivery delivery = Delivery.AT_LEAST_ONCE;
    private Metrics metrics = Metrics.NONE;

    private Builder(RelayStore store, Publisher publisher) {
      this.store = Objects.requireNonNull(store, "store must not be null");
      this.publisher = Objects.requireNonNull(publisher, "publisher must not be null");
    }

    /** The subscription: its own checkpoints over the shared log. Default {@value #DEFAULT_SUBSCRIPTION}. */
    public Builder subscription(String subscription) {
      this.subscription = subscription;
      return this;
    }

    /**
     * This instance's id. Default host, pid and a random part. A relay started again under the
     * same id (a restarted pod of a StatefulSet) takes over the buckets its predecessor held once
     * their leases end; two relays running at once under one id share the buckets as two
     * instances would, but are hard to tell apart in {@code txbox status}: give each its own.
     */
    public Builder instanceId(String instanceId) {
      this.instanceId = instanceId;
      this.instanceIdGiven = true;
      return this;
    }

    /** Most events per round. Default {@value #DEFAULT_BATCH_SIZE}. */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /**
     * Longest pause between polls when idle: how long the first event after an idle spell may
     * wait when no NOTIFY wakes the relay earlier. Default 500 ms.
     */
    public Builder idleInterval(Duration idleInterval) {
      this.idleInterval = idleInterval;
      return this;
    }

    /**
     * Time between heartbeats: how soon an instance sees another one join or leave, and so how
     * long buckets given back or left can wait for their new owner. Default 1 s.
     */
    public Builder heartbeatInterval(Duration heartbeatInterval) {
      this.heartbeatInterval = heartbeatInterval;
      return this;
    }

    /**
     * Lease on each bucket; a dead instance's buckets move after it. Default 10 s. The relay sends
     * and checkpoints a bucket only within four fifths of the lease after its last successful
     * renewal (on the monotonic clock), so a frozen or cut-off relay stops before another
     * instance can take the bucket.
     */
    public Builder leaseDuration(Duration leaseDuration) {
      this.leaseDuration = leaseDuration;
      return this;
    }

    /** How long {@link Relay#close()} waits for the current round. Default 30 s. */
    public Builder drainTimeout(Duration drainTimeout) {
      this.drainTimeout = drainTimeout;
      return this;
    }

    /** Warn when a transaction older than this holds delivery back. Default 30 s. */
    public Builder stallWarning(Duration stallWarning) {
      this.stallWarning = stallWarning;
      return this;
    }

    /**
     * What the relay promises: {@link Delivery#AT_LEAST_ONCE} (the default), or
     * {@link Delivery#EXACTLY_ONCE} with a {@link TransactionalPublisher}, for consumers that read
     * only committed records.
     */
    public Builder delivery(Delivery delivery) {
      this.delivery = Objects.requireNonNull(delivery, "delivery must not be null");
      return this;
    }

    /** How failed events are retried and when they are dead-lettered. */
    public Builder retryPolicy(RetryPolicy retryPolicy) {
      this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy must not be null");
      return this;
    }

    /** Where the relay reports what it does. Default none. */
    public Builder metrics(Metrics metrics) {
      this.metrics = Objects.requireNonNull(metrics, "metrics must not be null");
      return this;
    }

    /** Checks the settings and builds the relay; it starts with {@link Relay#start()}. */
    public Relay build() {
      if (subscription == null || !SUBSCRIPTION.matcher(subscription).matches()) {
        throw new IllegalArgumentException("subscription must be 1 to 64 characters of A-Z a-z 0-9 . _ -,"
            + " was '" + subscription + "'");
      }
      if (instanceId == null || instanceId.isBlank() || instanceId.length() > 200) {
        throw new IllegalArgumentException("instanceId must be 1 to 200 characters, was '" + instanceId + "'");
      }
      if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
        throw new IllegalArgumentException(
            "batchSize must be >= 1 and <= " + MAX_BATCH_SIZE + ", was " + batchSize);
      }
      requireBetween("idleInterval", idleInterval, Duration.ofMillis(1), HOUR);
      requireBetween("heartbeatInterval", heartbeatInterval, Duration.ofMillis(10), HOUR);
      requireBetween("leaseDuration", leaseDuration, heartbeatInterval.multipliedBy(2), HOUR);
      requireBetween("drainTimeout", drainTimeout, Duration.ZERO, HOUR);
      requireBetween("stallWarning", stallWarning, Duration.ofSeconds(1), Duration.ofDays(1));
      delivery.requireSupportedBy(publisher);
      return new Relay(this);
    }

    private static void requireBetween(String name, Duration value, Duration min, Duration max) {
      if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
        throw new IllegalArgumentException(
            name + " must be >= " + min + " and <= " + max + ", was " + value);
      }
    }

    private static String defaultInstanceId() {
      String host;
      try {
        host = InetAddress.getLocalHost().getHostName();
      } catch (Exception e) {
        host = "unknown-host";
      }
      long pid = ManagementFactory.getRuntimeMXBean().getPid();
      return host + "-" + pid + "-" + UUID.randomUUID().toString().substring(0, 8);
    }
  }
}
