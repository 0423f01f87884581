package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.txbox.Delivery;
import io.txbox.Janitor;
import io.txbox.Relay;
import io.txbox.RetryPolicy;
import io.txbox.cdc.LogicalRelay;
import io.txbox.cdc.LogicalReplication;
import io.txbox.cdc.ServerWait;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.spi.Database;
import io.txbox.jdbc.spi.Database.Capability;
import io.txbox.micrometer.BacklogMeters;
import io.txbox.micrometer.JanitorMeters;
import io.txbox.micrometer.RelayMeters;
import io.txbox.micrometer.SlotMeters;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.Publisher;
import io.txbox.spi.support.Secrets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code txbox relay}: relays the outbox to Kafka, NATS or RabbitMQ until stopped (SIGTERM drains and stops). */
@Command(name = "relay", mixinStandardHelpOptions = true,
    description = "Relays the outbox to the broker (--broker) until stopped. SIGTERM finishes the"
        + " current round, gives the buckets back to other instances, and exits.")
final class RelayCommand implements Callable<Integer> {
  private static final Logger log = LoggerFactory.getLogger(RelayCommand.class);

  @Mixin DatabaseOptions database;
  @Mixin BrokerOptions brokers;
  @Mixin LogicalOptions logical;
  @Mixin JanitorOptions janitorOptions;
  @Mixin HttpOptions http;
  @Spec CommandSpec spec;

  /** Where the relay reads events. */
  enum Source { table, logical }

  @Option(names = "--source", defaultValue = "table",
      description = "table: poll the outbox table by buckets (any PostgreSQL, or MariaDB); logical: stream a replication"
          + " slot in commit order, WAL messages and table rows (wal_level = logical, txbox migrate --logical)."
          + " Default: ${DEFAULT-VALUE}.")
  Source source;

  @Option(names = "--max-pending", defaultValue = "" + LogicalRelay.DEFAULT_MAX_PENDING,
      description = "--source logical: most events read and not yet confirmed. Default: ${DEFAULT-VALUE}.")
  int maxPending;

  @Option(names = "--status-interval", converter = DurationConverter.class,
      description = "--source logical: the keep-alive to the server while nothing is confirmed (each confirmation is sent at once). Default: 1s.")
  Duration statusInterval;

  @Option(names = "--standby-interval", converter = DurationConverter.class,
      description = "--source logical: how often a standby tries to take the slot. Default: 1s.")
  Duration standbyInterval;

  @Option(names = "--wait-warning", converter = DurationConverter.class,
      description = "--source logical: how long a call to the server (creating the slot again, starting the stream, a"
          + " checkpoint's commit) may wait before the relay logs what it waits for, again as often after, and"
          + " /health/ready answers 503. Default: " + LogicalRelay.DEFAULT_WAIT_WARNING_SECONDS + "s.")
  Duration waitWarning;

  @Option(names = "--delivery", defaultValue = "at-least-once", converter = DeliveryConverter.class,
      description = "at-least-once (default): every event reaches the broker at least once, and a txbox inbox drops"
          + " what arrives twice; exactly-once (Kafka): each round's records and the relay's progress are one Kafka"
          + " transaction, so a read_committed consumer sees each event once through crashes and frozen relays;"
          + " with --source logical a failing or delayed event holds the slot's later events. See"
          + " docs/exactly-once.md.")
  Delivery delivery;

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

  @Option(names = "--buckets", defaultValue = "" + Database.OutboxSettings.DEFAULT_BUCKETS,
      description = "Buckets, with --migrate on a new database. Default: ${DEFAULT-VALUE}.")
  int buckets;

  @Option(names = "--no-notify", description = "Do not LISTEN for NOTIFY; poll only.")
  boolean noNotify;

  @Option(names = "--listen-jdbc-url",
      description = "JDBC URL of the one connection the relay holds in LISTEN to be woken at each commit, when"
          + " --jdbc-url goes through a pooler that lends server connections per transaction (PgBouncer in"
          + " transaction mode, RDS Proxy), where notifications cannot arrive: PostgreSQL directly, or a pooler in"
          + " session mode. Same user and password as --jdbc-url unless it names its own. Default: --jdbc-url.")
  String listenJdbcUrl;

  @Option(names = "--config", description = "Properties file with option values (batch-size=500).")
  String config;

  @Option(names = "--max-pending-age", defaultValue = "5m", converter = DurationConverter.class,
      description = "/health/ready answers 503 once an event waits longer (as txbox status does). Default: ${DEFAULT-VALUE}.")
  Duration maxPendingAge;

  @Override
  public Integer call() throws InterruptedException {
    if (source != Source.logical) {
      TxboxCommand.refuseGiven(spec, "apply to --source logical only: drop them, or add --source logical",
          "--max-pending", "--status-interval", "--standby-interval", "--wait-warning", "--slot", "--publication",
          "--message-prefix");
    } else {
      TxboxCommand.refuseGiven(spec, "applies to --source table only: the logical relay is woken by the slot's"
          + " stream, which needs a connection that reaches PostgreSQL directly anyway", "--listen-jdbc-url");
    }
    return source == Source.logical ? streamSlot() : pollTable();
  }

  private Integer pollTable() throws InterruptedException {
    // Every setting is checked before anything connects.
    Publisher publisher = brokers.publisher(delivery);
    http.check();
    refuseWhatTheDatabaseLacks();
    HikariDataSource ds = database.poolOnAnyDatabase();
    // A relay frozen mid-transaction must not keep its row locks (and so its buckets) from the
    // others: the database ends the transaction once it sits idle as long as a lease lasts, set
    // by the store in each transaction or, where it cannot be, by the pool's connections.
    database.database().relayPoolInitSql(lease()).ifPresent(ds::setConnectionInitSql);
    PrometheusMeterRegistry registry = HttpOptions.registry();
    Running<Relay> running = startOrClose(ds, publisher, opened -> {
      JdbcOutboxStore store = database.database().outboxStore(ds, outboxSettings());
      RelayMeters meters = RelayMeters.create(registry);
      Relay r = relay(store.relay(), publisher, meters);
      Optional<Janitor> janitor = janitorOptions.janitor(store.janitor());
      database.checkConnection(ds);
      if (migrate) {
        store.migrate();
      } else {
        database.checkTables(ds);
      }
      HttpOptions.bindProcessMeters(registry, store.operator().outboxName()); // reads the database: after the check
      meters.register(subscription); // after the outbox tag's filter, so that the counters carry it
      BacklogMeters.builder(store.relay()).subscriptions(subscription).build().bindTo(registry);
      return serve(opened, registry, r::isRunning, r::isTroubled, () -> ready(ds, store, r), janitor, r::start);
    });
    Relay relay = running.relay();
    log.info("relay {} started: subscription {}, {}, database {}, {}", relay.instanceId(), subscription,
        brokers.describe(), Secrets.maskUrl(database.jdbcUrl), describeJanitor(running.janitor()));
    return runUntilStopped(running, ds, "finishing the current round and giving the buckets back",
        "relay " + relay.instanceId());
  }

  /** The table outbox's settings from the options; those the database lacks were refused before. */
  private Database.OutboxSettings outboxSettings() {
    Database db = database.database();
    Database.OutboxSettings settings = Database.OutboxSettings.of(database.tables(), buckets)
        .withIdleTransactionTimeout(lease());
    if (db.has(Capability.NOTIFY)) {
      settings = settings.withListening(!noNotify,
          listenJdbcUrl == null ? null : database.listenDataSource(listenJdbcUrl));
    }
    if (db.has(Capability.PARTITIONS)) {
      settings = settings.withPartitions(0, janitorOptions.partitionsAhead());
    }
    return settings;
  }

  /**
   * The outbox the logical relay streams into: its dead letters, janitor and readiness; no
   * wake-ups (the relay streams) and no idle limit (it locks no buckets).
   */
  private Database.OutboxSettings slotOutboxSettings() {
    return Database.OutboxSettings.of(database.tables(), buckets).withPartitions(0, janitorOptions.partitionsAhead());
  }

  /** The options that name what the URL's database cannot do, refused by capability. */
  private void refuseWhatTheDatabaseLacks() {
    database.refuseWhatTheDatabaseLacks(spec);
    database.refuseGiven(spec, Capability.NOTIFY, "--no-notify", "--listen-jdbc-url");
    database.refuseGiven(spec, Capability.PARTITIONS, "--partitions-ahead");
  }

  private Duration lease() {
    return leaseDuration != null ? leaseDuration : Relay.DEFAULT_LEASE_DURATION;
  }

  /**
   * Starts what runs beside a relay that is built and checked, in this order: the HTTP endpoint
   * (so that a taken port stops the start before the relay runs), the janitor, the relay.
   */
  private <R extends AutoCloseable> Running<R> serve(List<AutoCloseable> opened, PrometheusMeterRegistry registry,
      BooleanSupplier running, BooleanSupplier troubled, Supplier<OpsEndpoint.Verdict> ready,
      Optional<Janitor> janitor, Supplier<R> start) {
    Optional<OpsEndpoint> endpoint = opened(opened, http.start("0.0.0.0", registry,
        () -> OpsEndpoint.Verdict.of(running.getAsBoolean(), "relay", running.getAsBoolean() ? "running" : "stopped"),
        OpsEndpoint.refreshed(READY_REFRESH, ready)));
    Optional<Janitor> started = opened(opened, janitor.map(Janitor::start));
    started.ifPresent(j -> new JanitorMeters(j).bindTo(registry));
    bindLoopMeter(registry, troubled, started);
    return new Running<>(opened(opened, start.get()), started, endpoint);
  }

  /** How long a readiness verdict is reused: a probe every second must not read the status every second. */
  private static final Duration READY_REFRESH = Duration.ofSeconds(5);

  /** Ready: the relay runs and {@code txbox status} finds nothing wrong. */
  private OpsEndpoint.Verdict ready(HikariDataSource ds, JdbcOutboxStore store, Relay relay) {
    return verdict(relay.isRunning(), relayDetails(relay), ds, store);
  }

  /** What anyone who reaches the port may read: no instance id, which holds the host name and pid by default. */
  private Map<String, Object> relayDetails(Relay relay) {
    Map<String, Object> details = new LinkedHashMap<>();
    details.put("relay", relay.isRunning() ? "running" : "stopped");
    details.put("subscription", subscription);
    details.put("ownedBuckets", relay.ownedBuckets().size());
    return details;
  }

  /**
   * Ready: the logical relay streams the slot or stands by for it, no call of it to the server has
   * waited past its wait warning, and {@code txbox status} finds nothing wrong.
   */
  private OpsEndpoint.Verdict ready(HikariDataSource ds, JdbcOutboxStore store, LogicalRelay relay) {
    Map<String, Object> details = new LinkedHashMap<>();
    details.put("relay", !relay.isRunning() ? "stopped" : relay.isStreaming() ? "streaming" : "standby");
    details.put("slot", relay.slot());
    if (relay.problem() != null) {
      // The server's own words may name hosts and users: they are in the log, not in the answer.
      details.put("relayProblem", "the last attempt to stream the slot failed (the relay's log says why)");
    }
    Optional<ServerWait> stalled = relay.stalled();
    stalled.ifPresent(w -> details.put("relayWaits", "for " + w.age(Instant.now()).toSeconds() + " s, since "
        + w.since() + ", for " + w.what()));
    return verdict(relay.isRunning() && stalled.isEmpty(), details, ds, store);
  }

  private OpsEndpoint.Verdict verdict(boolean running, Map<String, Object> details, HikariDataSource ds,
      JdbcOutboxStore store) {
    StatusReport report = StatusReport.read(ds, store, STATUS_LIMIT_PER_BUCKET, maxPendingAge);
    details.put("problems", report.problems().stream().map(Secrets::mask).toList());
    return new OpsEndpoint.Verdict(running && report.healthy(), details);
  }

  /** Events counted per bucket at most by the readiness probe, as {@code txbox status} counts by default. */
  private static final int STATUS_LIMIT_PER_BUCKET = 1000;

  /** {@code txbox.loops.troubled}, as the starter exports it: the background loops whose last step failed. */
  private static void bindLoopMeter(PrometheusMeterRegistry registry, BooleanSupplier relayTroubled,
      Optional<Janitor> janitor) {
    Gauge.builder("txbox.loops.troubled", () -> (relayTroubled.getAsBoolean() ? 1 : 0)
            + (janitor.map(Janitor::isTroubled).orElse(false) ? 1 : 0))
        .description("Background loops (relay, janitor) whose last step failed; they go on trying")
        .strongReference(true)
        .register(registry);
  }

  /** A started relay, the janitor and the HTTP endpoint beside it; closing stops the relay last. */
  private record Running<R extends AutoCloseable>(R relay, Optional<Janitor> janitor, Optional<OpsEndpoint> endpoint)
      implements AutoCloseable {
    @Override
    public void close() throws Exception {
      janitor.ifPresent(Janitor::close);
      relay.close();
      endpoint.ifPresent(OpsEndpoint::close); // answers probes while the relay drains
    }
  }

  private String describeJanitor(Optional<Janitor> janitor) {
    return janitor.isEmpty() ? "no janitor (--no-janitor)" : "janitor every "
        + DurationConverter.format(janitorOptions.interval) + " (outbox retention "
        + DurationConverter.format(janitorOptions.outboxRetention) + ", inbox retention "
        + DurationConverter.format(janitorOptions.inboxRetention) + ")";
  }

  private Integer streamSlot() throws InterruptedException {
    Publisher publisher = brokers.publisher(delivery);
    http.check();
    HikariDataSource ds = database.pool();
    PrometheusMeterRegistry registry = HttpOptions.registry();
    Running<LogicalRelay> running = startOrClose(ds, publisher, opened -> {
      JdbcOutboxStore store = database.database().outboxStore(ds, slotOutboxSettings());
      LogicalReplication replication = logical.replication(ds, store);
      RelayMeters meters = RelayMeters.create(registry);
      LogicalRelay.Builder b = LogicalRelay.builder(replication, publisher)
          .connection(database.jdbcUrl, LogicalOptions.credentials(database))
          .batchSize(batchSize)
          .maxPending(maxPending)
          .retryPolicy(retryPolicy())
          .delivery(delivery)
          .metrics(meters);
      set(idleInterval, b::idleInterval);
      set(statusInterval, b::statusInterval);
      set(standbyInterval, b::standbyInterval);
      set(waitWarning, b::waitWarning);
      set(drainTimeout, b::drainTimeout);
      LogicalRelay r = b.build();
      Optional<Janitor> janitor = janitorOptions.janitor(store.janitor());
      database.checkConnection(ds);
      if (migrate) {
        replication.migrate();
      } else {
        database.checkTables(ds);
      }
      HttpOptions.bindProcessMeters(registry, store.operator().outboxName());
      meters.register(r.slot()); // after the outbox tag's filter, so that the counters carry it
      SlotMeters.builder(replication).relay(r).build().bindTo(registry);
      return serve(opened, registry, r::isRunning, r::isTroubled, () -> ready(ds, store, r), janitor, r::start);
    });
    LogicalRelay relay = running.relay();
    log.info("logical relay started: slot {}, {}, database {}, {}", relay.slot(), brokers.describe(),
        Secrets.maskUrl(database.jdbcUrl), describeJanitor(running.janitor()));
    return runUntilStopped(running, ds, "finishing the batch in hand and confirming it",
        "logical relay of slot " + relay.slot());
  }

  /** Remembers what was opened, so that a failure later in the start closes it. */
  private static <T> T opened(List<AutoCloseable> opened, T thing) {
    if (thing instanceof Optional<?> o && o.orElse(null) instanceof AutoCloseable c) {
      opened.add(c);
    } else if (thing instanceof AutoCloseable c) {
      opened.add(c);
    }
    return thing;
  }

  /**
   * Builds and starts a relay; on any failure what it opened (the endpoint, the relay), the pool
   * and the publisher are closed, so that the process can exit.
   */
  private static <T> T startOrClose(HikariDataSource ds, Publisher publisher, Function<List<AutoCloseable>, T> start) {
    List<AutoCloseable> opened = new ArrayList<>();
    try {
      return start.apply(opened);
    } catch (RuntimeException e) {
      for (AutoCloseable c : opened) {
        try {
          c.close();
        } catch (Exception suppressed) {
          e.addSuppressed(suppressed);
        }
      }
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

  private Relay relay(OutboxStore store, Publisher publisher, RelayMeters meters) {
    Relay.Builder b = Relay.builder(store, publisher)
        .metrics(meters)
        .subscription(subscription)
        .delivery(delivery)
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
