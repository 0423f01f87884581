package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Relay;
import io.txbox.RetryPolicy;
import io.txbox.cdc.LogicalRelay;
import io.txbox.cdc.LogicalReplication;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.spi.Publisher;
import io.txbox.spi.Secrets;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code txbox relay}: relays the outbox to Kafka, NATS or RabbitMQ until stopped (SIGTERM drains and stops). */
@Command(name = "relay", mixinStandardHelpOptions = true,
    description = "Relays the outbox to Kafka, NATS JetStream or RabbitMQ until stopped. SIGTERM finishes the"
        + " current round, gives the buckets back to other instances, and exits.")
final class RelayCommand implements Callable<Integer> {
  private static final Logger log = LoggerFactory.getLogger(RelayCommand.class);

  @Mixin DatabaseOptions database;
  @Mixin BrokerOptions brokers;
  @Mixin LogicalOptions logical;

  /** Where the relay reads events. */
  enum Source { table, logical }

  @Option(names = "--source", defaultValue = "table",
      description = "table: poll the outbox table by buckets (any PostgreSQL); logical: stream a replication"
          + " slot in commit order, WAL messages and table rows (wal_level = logical, txbox migrate --logical)."
          + " Default: ${DEFAULT-VALUE}.")
  Source source;

  @Option(names = "--max-pending", defaultValue = "" + LogicalRelay.DEFAULT_MAX_PENDING,
      description = "--source logical: most events read and not yet confirmed. Default: ${DEFAULT-VALUE}.")
  int maxPending;

  @Option(names = "--status-interval", converter = DurationConverter.class,
      description = "--source logical: how often the confirmed position reaches the server. Default: 1s.")
  Duration statusInterval;

  @Option(names = "--standby-interval", converter = DurationConverter.class,
      description = "--source logical: how often a standby tries to take the slot. Default: 1s.")
  Duration standbyInterval;

  @Option(names = "--subscription", defaultValue = Relay.DEFAULT_SUBSCRIPTION,
      description = "Subscription: its own checkpoints over the log. Default: ${DEFAULT-VALUE}.")
  String subscription;

  @Option(names = "--instance-id", description = "This instance's id. Default: host, pid and a random part.")
  String instanceId;

  @Option(names = "--batch-size", defaultValue = "" + Relay.DEFAULT_BATCH_SIZE,
      description = "Most events per round, 1 to " + Relay.MAX_BATCH_SIZE + ". Default: ${DEFAULT-VALUE}.")
  int batchSize;

  @Option(names = "--idle-interval", converter = DurationConverter.class, description = "Longest pause between polls when idle. Default: 500ms; --source logical: 5ms, at most 1s.")
  Duration idleInterval;

  @Option(names = "--heartbeat-interval", converter = DurationConverter.class, description = "Default: 1s.")
  Duration heartbeatInterval;

  @Option(names = "--lease-duration", converter = DurationConverter.class,
      description = "Bucket lease; a dead instance's buckets move after it. Default: 10s.")
  Duration leaseDuration;

  @Option(names = "--drain-timeout", converter = DurationConverter.class, description = "Default: 30s.")
  Duration drainTimeout;

  @Option(names = "--stall-warning", converter = DurationConverter.class,
      description = "Warn when a transaction this old holds delivery back. Default: 30s.")
  Duration stallWarning;

  @Option(names = "--retry-initial-delay", converter = DurationConverter.class, description = "Default: 100ms.")
  Duration retryInitialDelay;

  @Option(names = "--retry-max-delay", converter = DurationConverter.class, description = "Default: 30s.")
  Duration retryMaxDelay;

  @Option(names = "--retry-max-attempts", description = "Attempts before dead-lettering. Default: 10.")
  Integer retryMaxAttempts;

  @Option(names = "--migrate", description = "Create or upgrade the tables before relaying.")
  boolean migrate;

  @Option(names = "--buckets", defaultValue = "" + PostgresOutboxStore.DEFAULT_BUCKETS,
      description = "Buckets, with --migrate on a new database. Default: ${DEFAULT-VALUE}.")
  int buckets;

  @Option(names = "--no-notify", description = "Do not LISTEN for NOTIFY; poll only.")
  boolean noNotify;

  @Option(names = "--config", description = "Properties file with option values (batch-size=500).")
  String config;

  @Override
  public Integer call() throws InterruptedException {
    return source == Source.logical ? streamSlot() : pollTable();
  }

  private Integer pollTable() throws InterruptedException {
    // Every setting is checked before anything connects.
    Publisher publisher = brokers.publisher();
    HikariDataSource ds = database.pool();
    Relay relay = startOrClose(ds, publisher, () -> {
      PostgresOutboxStore store = database.store(ds).buckets(buckets).listen(!noNotify).build();
      Relay r = relay(store, publisher);
      database.checkConnection(ds);
      if (migrate) {
        store.migrate();
      }
      return r.start();
    });
    log.info("relay {} started: subscription {}, {}, database {}", relay.instanceId(), subscription,
        brokers.describe(), Secrets.mask(database.jdbcUrl));
    return runUntilStopped(relay, ds, "finishing the current round and giving the buckets back",
        "relay " + relay.instanceId());
  }

  private Integer streamSlot() throws InterruptedException {
    Publisher publisher = brokers.publisher();
    HikariDataSource ds = database.pool();
    LogicalRelay relay = startOrClose(ds, publisher, () -> {
      LogicalReplication replication = logical.replication(ds, database.store(ds).buckets(buckets).build());
      LogicalRelay.Builder b = LogicalRelay.builder(replication, publisher)
          .connection(database.jdbcUrl, LogicalOptions.credentials(database))
          .batchSize(batchSize)
          .maxPending(maxPending)
          .retryPolicy(retryPolicy());
      set(idleInterval, b::idleInterval);
      set(statusInterval, b::statusInterval);
      set(standbyInterval, b::standbyInterval);
      set(drainTimeout, b::drainTimeout);
      LogicalRelay r = b.build();
      database.checkConnection(ds);
      if (migrate) {
        replication.migrate();
      }
      return r.start();
    });
    log.info("logical relay started: slot {}, {}, database {}", relay.slot(), brokers.describe(),
        Secrets.mask(database.jdbcUrl));
    return runUntilStopped(relay, ds, "finishing the batch in hand and confirming it",
        "logical relay of slot " + relay.slot());
  }

  /** Builds and starts a relay; on any failure the pool and the publisher are closed. */
  private static <T> T startOrClose(HikariDataSource ds, Publisher publisher, Supplier<T> start) {
    try {
      return start.get();
    } catch (RuntimeException e) {
      ds.close();
      publisher.close();
      throw e;
    }
  }

  /** Waits until SIGTERM (or SIGINT), then stops the relay gracefully and closes the pool. */
  private static Integer runUntilStopped(AutoCloseable relay, HikariDataSource ds, String stopping, String name)
      throws InterruptedException {
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      log.info("stopping: {}", stopping);
      try {
        relay.close();
      } catch (Exception e) {
        log.warn("{} did not stop cleanly: {}", name, e.toString());
      }
      ds.close();
      log.info("{} stopped cleanly", name);
      stopped.countDown();
    }, "txbox-shutdown"));
    stopped.await();
    return 0;
  }

  private RetryPolicy retryPolicy() {
    RetryPolicy.Builder retry = RetryPolicy.builder();
    set(retryInitialDelay, retry::initialDelay);
    set(retryMaxDelay, retry::maxDelay);
    set(retryMaxAttempts, retry::maxAttempts);
    return retry.build();
  }

  private Relay relay(PostgresOutboxStore store, Publisher publisher) {
    Relay.Builder b = Relay.builder(store, publisher)
        .subscription(subscription)
        .batchSize(batchSize)
        .retryPolicy(retryPolicy());
    set(instanceId, b::instanceId);
    set(idleInterval, b::idleInterval);
    set(heartbeatInterval, b::heartbeatInterval);
    set(leaseDuration, b::leaseDuration);
    set(drainTimeout, b::drainTimeout);
    set(stallWarning, b::stallWarning);
    return b.build();
  }

  private static <T> void set(T value, Consumer<T> setter) {
    if (value != null) {
      setter.accept(value);
    }
  }
}
