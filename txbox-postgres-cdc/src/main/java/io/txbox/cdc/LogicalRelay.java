package io.txbox.cdc;

import io.txbox.Delivery;
import io.txbox.RetryPolicy;
import io.txbox.cdc.internal.StreamLoop;
import io.txbox.cdc.internal.StreamSettings;
import io.txbox.spi.Metrics;
import io.txbox.spi.Publisher;
import io.txbox.spi.support.LoopGuard;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Relays outbox events to a broker from PostgreSQL's logical decoding, in commit order: the WAL
 * messages of a {@link WalOutboxStore} and the rows inserted into the outbox table, through one
 * replication slot. Nothing waits for other open transactions, in this database or another: a
 * transaction's events come when it commits, after every transaction that committed before it.
 *
 * <p>At least once, in order per key: the slot's position is confirmed only after the broker
 * acknowledged (or the relay dead-lettered) every event before it, and it reaches the server
 * before the next batch leaves; after a crash the stream resumes there, so a killed relay sends
 * again at most the batch it had with the broker (and the acknowledged part of a transaction
 * larger than a batch). A failing event waits with its key under the {@link RetryPolicy} while
 * other keys go on, and is dead-lettered when the policy gives up. One relay streams a slot at a time; others
 * started on the same slot stand by and take over within about {@code standbyInterval} of the
 * active one's connection closing (a killed process closes it at once; a relay cut off by the
 * network is noticed by the server after its {@code wal_sender_timeout}).
 *
 * <p>With {@link Builder#delivery delivery} {@link Delivery#EXACTLY_ONCE} and a transactional
 * publisher, each batch and the slot's place in the stream are one broker transaction: a relay
 * that begins streaming fences the one before it and passes what the broker holds, so a
 * read_committed consumer sees each event once (docs/exactly-once.md).
 *
 * <p>Decoding reads only WAL already flushed: an event committed with {@code synchronous_commit =
 * off} leaves when the WAL writer flushes it, up to {@code wal_writer_delay} (200 ms by default)
 * after its commit. {@link #start()} logs this when it is the database's default.
 *
 * <pre>{@code
 * LogicalReplication replication = LogicalReplication.builder(dataSource, store).build();
 * replication.migrate();
 * LogicalRelay relay = LogicalRelay.builder(replication, kafkaPublisher)
 *     .connection("jdbc:postgresql://db:5432/shop", credentials)   // not a pooled connection
 *     .build()
 *     .start();
 * ...
 * relay.close();
 * }</pre>
 *
 * <table>
 *   <caption>Settings and their defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>range</th></tr>
 *   <tr><td>batchSize</td><td>{@value #DEFAULT_BATCH_SIZE}</td><td>1 to {@value #MAX_BATCH_SIZE}</td></tr>
 *   <tr><td>maxPending</td><td>{@value #DEFAULT_MAX_PENDING}</td><td>batchSize to {@value #MAX_PENDING_LIMIT}: events read and not yet confirmed</td></tr>
 *   <tr><td>idleInterval</td><td>5 ms</td><td>1 ms to 1 s: longest pause between reads when nothing comes</td></tr>
 *   <tr><td>statusInterval</td><td>1 s</td><td>10 ms to 1 min: the keep-alive while nothing is confirmed (a confirmation is sent at once)</td></tr>
 *   <tr><td>standbyInterval</td><td>1 s</td><td>10 ms to 1 min: how often a standby tries the slot</td></tr>
 *   <tr><td>drainTimeout</td><td>30 s</td><td>0 to 1 h</td></tr>
 *   <tr><td>checkpointInterval</td><td>1 s</td><td>100 ms to 1 min: how often the relay's progress is also written to the outbox's schema, which a failover keeps</td></tr>
 *   <tr><td>waitWarning</td><td>{@value #DEFAULT_WAIT_WARNING_SECONDS} s</td><td>1 s to 1 h: how long a call to the server may wait before the relay warns of it, and again each time as long after</td></tr>
 *   <tr><td>retryPolicy</td><td>{@link RetryPolicy#defaults()}</td><td></td></tr>
 * </table>
 */
public final class LogicalRelay implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(LogicalRelay.class);

  /** Default most events per publish. */
  public static final int DEFAULT_BATCH_SIZE = 1000;
  /** Highest accepted batch size. */
  public static final int MAX_BATCH_SIZE = 100_000;
  /** Default most events read and not yet confirmed. */
  public static final int DEFAULT_MAX_PENDING = 20_000;
  /** Highest accepted maxPending. */
  public static final int MAX_PENDING_LIMIT = 1_000_000;
  /** Default time a call to the server waits before the relay warns of it. */
  public static final int DEFAULT_WAIT_WARNING_SECONDS = 30;
  /** How often the calls in progress are looked at, for their warnings. */
  private static final long WAIT_CHECK_MILLIS = 1000;

  private final StreamSettings settings;
  private final LogicalReplication replication;
  private final Publisher publisher;
  private final Metrics metrics;
  private StreamLoop loop;
  private Thread thread;
  private ScheduledExecutorService checkpointing;

  private LogicalRelay(Builder b) {
    this.replication = b.replication;
    this.publisher = b.publisher;
    this.metrics = b.metrics;
    this.settings = new StreamSettings(b.jdbcUrl, b.properties, replication.slot(), replication.publication(),
        replication.messagePrefix(), replication.store().tables(), b.batchSize, b.maxPending, b.idleInterval, b.statusInterval,
        b.standbyInterval, b.drainTimeout, b.checkpointInterval, b.waitWarning, b.retryPolicy, b.delivery);
  }

  /** A builder for a relay of {@code replication}'s slot to {@code publisher}. */
  public static Builder builder(LogicalReplication replication, Publisher publisher) {
    return new Builder(replication, publisher);
  }

  /** Starts streaming, or standing by while another relay streams the slot. */
  public synchronized LogicalRelay start() {
    if (loop != null) {
      throw new IllegalStateException("logical relay of slot " + settings.slot() + " is already started");
    }
    noteAsynchronousCommits();
    loop = new StreamLoop(settings, publisher, replication.store().deadLetterSink(), replication.dataSource(), metrics,
        () -> replication.store().relay().outboxId().orElse(null));
    thread = new Thread(loop, "txbox-logical-" + settings.slot());
    thread.start();
    StreamLoop started = loop;
    LoopGuard guard = new LoopGuard("checkpoints of slot " + settings.slot());
    // Two threads: the warnings of calls that wait go on while a checkpoint's commit hangs.
    checkpointing = Executors.newScheduledThreadPool(2, r -> {
      Thread t = new Thread(r, "txbox-logical-checkpoint-" + settings.slot());
      t.setDaemon(true);
      return t;
    });
    long every = settings.checkpointInterval().toMillis();
    checkpointing.scheduleWithFixedDelay(() -> guard.attempt(started::checkpoint), every, every, TimeUnit.MILLISECONDS);
    checkpointing.scheduleWithFixedDelay(() -> started.calls().report(), WAIT_CHECK_MILLIS, WAIT_CHECK_MILLIS,
        TimeUnit.MILLISECONDS);
    return this;
  }

  /**
   * Logs once whether the database's default commits hold events back. On a thread of its own:
   * a pool waits for a server that is down, and the relay starts without waiting for it.
   */
  private void noteAsynchronousCommits() {
    Runnable note = () -> replication.asynchronousCommitNotice()
        .ifPresent(notice -> log.info("slot {}: {}", settings.slot(), notice));
    Thread check = new Thread(note, "txbox-logical-" + settings.slot() + "-settings");
    check.setDaemon(true);
    check.start();
  }

  /** Whether this relay streams the slot now; {@code false} while it stands by. */
  public boolean isStreaming() {
    StreamLoop l = loop;
    return l != null && l.isStreaming();
  }

  /** Whether the relay is started and its thread alive. */
  public boolean isRunning() {
    Thread t = thread;
    return t != null && t.isAlive();
  }

  /** Whether its last attempt to stream failed; {@link #problem()} says why. */
  public boolean isTroubled() {
    StreamLoop l = loop;
    return l != null && l.isTroubled();
  }

  /** The last error with what to do about it, or {@code null}. */
  public String problem() {
    StreamLoop l = loop;
    return l == null ? null : l.problem();
  }

  /** The last WAL position this relay confirmed to the slot; 0 before the first. */
  public long confirmedLsn() {
    StreamLoop l = loop;
    return l == null ? 0 : l.confirmedLsn();
  }

  /** How long ago the oldest event read and not yet confirmed committed; zero when none waits. */
  public Duration lag() {
    StreamLoop l = loop;
    Instant oldest = l == null ? null : l.oldestPending();
    return oldest == null ? Duration.ZERO : Duration.between(oldest, Instant.now());
  }

  /**
   * Events this relay read from the slot and has not confirmed yet (acknowledged ones included
   * until the slot confirms their transaction); 0 for a standby.
   */
  public int pending() {
    StreamLoop l = loop;
    return l == null ? 0 : l.pending();
  }

  /**
   * The call to the server this relay has waited for longest, if one is in progress: creating
   * the slot again, starting the stream, reading or committing a checkpoint. Most last
   * milliseconds; see {@link #stalled()}.
   */
  public Optional<ServerWait> waitingFor() {
    StreamLoop l = loop;
    return l == null ? Optional.empty() : l.calls().longest();
  }

  /**
   * The call to the server this relay has waited for longest, if it has waited {@code
   * waitWarning} or longer: the relay is not ready, and its log says so every {@code waitWarning}.
   */
  public Optional<ServerWait> stalled() {
    StreamLoop l = loop;
    return l == null ? Optional.empty() : l.calls().stalled();
  }

  /** The slot this relay streams. */
  public String slot() {
    return settings.slot();
  }

  /**
   * Stops: the batch in hand is published and confirmed within the drain timeout, the replication
   * connection closes (a standby takes over), and the publisher is closed. Safe to call twice.
   */
  @Override
  public synchronized void close() {
    if (loop == null) {
      return;
    }
    loop.stop();
    try {
      thread.join(settings.drainTimeout().toMillis() + settings.standbyInterval().toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    checkpointing.shutdownNow();
    loop = null;
    publisher.close();
  }

  /** Builds a {@link LogicalRelay}; {@link #build()} checks every setting. */
  public static final class Builder {
    private final LogicalReplication replication;
    private final Publisher publisher;
    private String jdbcUrl;
    private Properties properties = new Properties();
    private int batchSize = DEFAULT_BATCH_SIZE;
    private int maxPending = DEFAULT_MAX_PENDING;
    private Duration idleInterval = Duration.ofMillis(5);
    private Duration statusInterval = Duration.ofSeconds(1);
    private Duration standbyInterval = Duration.ofSeconds(1);
    private Duration drainTimeout = Duration.ofSeconds(30);
    private Duration checkpointInterval = Duration.ofSeconds(1);
    private Duration waitWarning = Duration.ofSeconds(DEFAULT_WAIT_WARNING_SECONDS);
    private RetryPolicy retryPolicy = RetryPolicy.defaults();
    private Metrics metrics = Metrics.NONE;
    private Delivery delivery = Delivery.AT_LEAST_ONCE;

    private Builder(LogicalReplication replication, Publisher publisher) {
      this.replication = Objects.requireNonNull(replication, "replication must not be null");
      this.publisher = Objects.requireNonNull(publisher, "publisher must not be null");
    }

    /**
     * Where the replication connection goes: a {@code jdbc:postgresql:} URL of the database that
     * holds the slot, and its properties (user, password, SSL). Required. The relay opens this
     * connection itself, since a pool cannot hand out replication connections.
     */
    public Builder connection(String jdbcUrl, Properties properties) {
      this.jdbcUrl = jdbcUrl;
      this.properties = Objects.requireNonNull(properties, "properties must not be null");
      return this;
    }

    /** Most events per publish. Default {@value #DEFAULT_BATCH_SIZE}. */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /**
     * Most events held in memory, read and not yet confirmed; the stream pauses (and the server
     * keeps the rest) while a failing key holds this many behind it. Default {@value #DEFAULT_MAX_PENDING}.
     */
    public Builder maxPending(int maxPending) {
      this.maxPending = maxPending;
      return this;
    }

    /** Longest pause between reads while nothing comes. Default 5 ms. */
    public Builder idleInterval(Duration idleInterval) {
      this.idleInterval = idleInterval;
      return this;
    }

    /**
     * How often a status update reaches the server when no confirmation has sent one: the
     * keep-alive that {@code wal_sender_timeout} waits for. A confirmation is sent as soon as a
     * batch is settled. Default 1 s.
     */
    public Builder statusInterval(Duration statusInterval) {
      this.statusInterval = statusInterval;
      return this;
    }

    /** How often a standby tries to take the slot. Default 1 s. */
    public Builder standbyInterval(Duration standbyInterval) {
      this.standbyInterval = standbyInterval;
      return this;
    }

    /** How long {@link LogicalRelay#close()} waits for the batch in hand. Default 30 s. */
    public Builder drainTimeout(Duration drainTimeout) {
      this.drainTimeout = drainTimeout;
      return this;
    }

    /**
     * How often the relay's progress is also written to the outbox's schema as a checkpoint (the
     * transactions it has delivered), which replication carries to the standbys: after a failover
     * that lost the slot, the outbox rows of the transactions since the last one are relayed again
     * from the table, so this bounds the duplicates a failover causes. Default 1 s.
     */
    public Builder checkpointInterval(Duration checkpointInterval) {
      this.checkpointInterval = checkpointInterval;
      return this;
    }

    /**
     * How long a call to the server (creating the slot again, starting the stream, a checkpoint's
     * commit) may wait before the relay logs a warning naming what it waits for and since when,
     * again every as long after, and {@link LogicalRelay#stalled()} reports it. Default {@value
     * #DEFAULT_WAIT_WARNING_SECONDS} s.
     */
    public Builder waitWarning(Duration waitWarning) {
      this.waitWarning = waitWarning;
      return this;
    }

    /** How failed events are retried and when they are dead-lettered. */
    public Builder retryPolicy(RetryPolicy retryPolicy) {
      this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy must not be null");
      return this;
    }

    /**
     * What the relay promises: {@link Delivery#AT_LEAST_ONCE} (the default), or {@link
     * Delivery#EXACTLY_ONCE} with a {@link io.txbox.spi.TransactionalPublisher}: each batch and the
     * slot's place in the stream are one broker transaction, the place is read back whenever a relay
     * begins streaming the slot, and a batch is the next events in commit order, so a failing or
     * delayed event holds the slot's later events back (docs/exactly-once.md).
     */
    public Builder delivery(Delivery delivery) {
      this.delivery = Objects.requireNonNull(delivery, "delivery must not be null");
      return this;
    }

    /** Where the relay reports what it does; the slot's name is the subscription. Default none. */
    public Builder metrics(Metrics metrics) {
      this.metrics = Objects.requireNonNull(metrics, "metrics must not be null");
      return this;
    }

    /** Checks the settings and builds the relay; it starts with {@link LogicalRelay#start()}. */
    public LogicalRelay build() {
      if (jdbcUrl == null || !jdbcUrl.startsWith("jdbc:postgresql:")) {
        throw new IllegalArgumentException("connection must be a jdbc:postgresql: URL of the database that"
            + " holds the slot, was '" + jdbcUrl + "'");
      }
      if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
        throw new IllegalArgumentException("batchSize must be >= 1 and <= " + MAX_BATCH_SIZE + ", was " + batchSize);
      }
      if (maxPending < batchSize || maxPending > MAX_PENDING_LIMIT) {
        throw new IllegalArgumentException("maxPending must be >= batchSize (" + batchSize + ") and <= "
            + MAX_PENDING_LIMIT + ", was " + maxPending);
      }
      requireBetween("idleInterval", idleInterval, Duration.ofMillis(1), Duration.ofSeconds(1));
      requireBetween("statusInterval", statusInterval, Duration.ofMillis(10), Duration.ofMinutes(1));
      requireBetween("standbyInterval", standbyInterval, Duration.ofMillis(10), Duration.ofMinutes(1));
      requireBetween("drainTimeout", drainTimeout, Duration.ZERO, Duration.ofHours(1));
      requireBetween("checkpointInterval", checkpointInterval, Duration.ofMillis(100), Duration.ofMinutes(1));
      requireBetween("waitWarning", waitWarning, Duration.ofSeconds(1), Duration.ofHours(1));
      delivery.requireSupportedBy(publisher);
      return new LogicalRelay(this);
    }

    private static void requireBetween(String name, Duration value, Duration min, Duration max) {
      if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
        throw new IllegalArgumentException(name + " must be >= " + min + " and <= " + max + ", was " + value);
      }
    }
  }
}
