package io.txbox.spring;

import io.txbox.Delivery;
import io.txbox.jdbc.spi.Database;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The {@code txbox.*} settings. Every limit has the default of the txbox builder it feeds, and a
 * value out of bounds stops the application at start-up with an error that names the property.
 *
 * <pre>{@code
 * # application.properties: all a Kafka user needs besides spring.datasource.*
 * txbox.kafka.bootstrap-servers=kafka:9092
 * txbox.health.max-pending-age=2m
 * }</pre>
 *
 * @param migrate whether to create or upgrade the txbox tables at start-up; turn it off when
 *     Flyway or Liquibase runs the SQL of txbox-postgres's {@code io/txbox/postgres} scripts
 * @param schema the database schema of the txbox tables
 * @param tablePrefix the prefix of the txbox table names
 * @param buckets buckets the outbox log is split into, fixed once the tables exist: the most relay
 *     instances that share the work
 * @param outboxPartitionSize positions per partition of the outbox table: above 0, the migration
 *     partitions the table (keeping its rows) and the janitor drops whole partitions instead of
 *     deleting rows; 0 (default) leaves the table as it is
 * @param partitionsAhead empty outbox partitions the janitor keeps ahead of the writers
 * @param partitionLockTimeout longest wait for the outbox's lock to create or drop a partition
 * @param broker the broker events are relayed to and listeners read from ({@code kafka},
 *     {@code nats}, {@code rabbitmq}, {@code sqs}, or another module's): needed only when more than
 *     one broker module is on the class path. Its own settings are {@code txbox.<broker>.*}, read
 *     by its transport, not here (docs/settings.md lists them)
 * @param outbox how {@code Outbox.send} writes events
 * @param relay the relay, which publishes committed events
 * @param logical logical decoding (txbox-postgres-cdc): the slot and the logical relay
 * @param janitor the janitor, which deletes relayed events and old inbox records
 * @param inbox the inbox listeners
 * @param health the actuator health indicator
 * @param metrics the Micrometer meters
 * @param tracing the OpenTelemetry tracing
 */
@ConfigurationProperties("txbox")
public record TxboxProperties(
    @DefaultValue("true") boolean migrate,
    @DefaultValue(Database.Tables.DEFAULT_SCHEMA) String schema,
    @DefaultValue("txbox_") String tablePrefix,
    @DefaultValue("64") int buckets,
    @DefaultValue("0") long outboxPartitionSize,
    @DefaultValue("2") int partitionsAhead,
    @DefaultValue("100ms") Duration partitionLockTimeout,
    String broker,
    @DefaultValue Outbox outbox,
    @DefaultValue Relay relay,
    @DefaultValue Logical logical,
    @DefaultValue Janitor janitor,
    @DefaultValue Inbox inbox,
    @DefaultValue Health health,
    @DefaultValue Metrics metrics,
    @DefaultValue Tracing tracing) {

  /** Whether an event is a row of the outbox table or a WAL message; see docs/logical-decoding.md. */
  public enum WriteMode {
    /** A row of the outbox table, relayed by either source. */
    TABLE,
    /** A WAL message ({@code pg_logical_emit_message}): no row, relayed only by the logical source. */
    WAL_MESSAGE
  }

  /** Where the relay reads committed events. */
  public enum Source {
    /** Polls the outbox table below the transaction horizon, buckets shared among instances by leases. */
    TABLE,
    /** Streams a logical replication slot in commit order; one instance streams, the others stand by. */
    LOGICAL
  }

  /**
   * The outbox.
   *
   * @param writeMode {@code table} (default) or {@code wal-message}, which needs
   *     {@code txbox.relay.source=logical}
   */
  public record Outbox(@DefaultValue("table") WriteMode writeMode) {}

  /**
   * The relay. With {@code source=logical}, the settings under {@code txbox.logical} apply instead of
   * the batch, interval and lease settings here.
   *
   * @param enabled whether this application runs a relay; instances share the work by leases
   * @param source {@code table} (default) or {@code logical}
   * @param subscription the subscription the relay serves
   * @param instanceId this instance's id in the subscription; default a random one
   * @param batchSize most events read and published per round
   * @param idleInterval how long the relay waits for new events when it found none
   * @param heartbeatInterval how often the relay renews its leases
   * @param leaseDuration how long a lease lasts without renewal before another instance takes it
   * @param drainTimeout how long shutdown waits for the round in progress
   * @param stallWarning after how long a transaction holding delivery back is logged
   * @param listenJdbcUrl where the relay holds its one {@code LISTEN} connection, when
   *     {@code spring.datasource.url} goes through a pooler that lends server connections per
   *     transaction (PgBouncer in transaction mode, RDS Proxy): PostgreSQL directly, or through
   *     session pooling; user and password as the DataSource's (Boot's connection details:
   *     {@code spring.datasource.*} or a service connection) unless in the URL.
   *     Default: the application's DataSource (docs/poolers.md)
   * @param delivery {@code at-least-once} (default), or {@code exactly-once} with Kafka: each
   *     round's records and the relay's progress are one Kafka transaction, so a {@code
   *     read_committed} consumer sees each event once (docs/exactly-once.md); with {@code
   *     source=logical} a failing or delayed event holds the slot's later events; another broker
   *     refuses it at start-up
   */
  public record Relay(
      @DefaultValue("true") boolean enabled,
      @DefaultValue("table") Source source,
      @DefaultValue("default") String subscription,
      String instanceId,
      @DefaultValue("5000") int batchSize,
      @DefaultValue("500ms") Duration idleInterval,
      @DefaultValue("1s") Duration heartbeatInterval,
      @DefaultValue("10s") Duration leaseDuration,
      @DefaultValue("30s") Duration drainTimeout,
      @DefaultValue("30s") Duration stallWarning,
      String listenJdbcUrl,
      @DefaultValue("at-least-once") Delivery delivery) {}

  /**
   * Logical decoding, with txbox-postgres-cdc on the class path: used when
   * {@code txbox.relay.source=logical} or {@code txbox.outbox.write-mode=wal-message}. Migration
   * then also creates the publication and the slot, and checks {@code wal_level=logical}.
   *
   * @param slot the replication slot
   * @param publication the publication of the outbox table's inserts
   * @param messagePrefix the prefix of txbox's WAL messages
   * @param jdbcUrl the URL of the replication connection; default the DataSource's as Boot connects it
   *     ({@code spring.datasource.url}, or a service connection such as Testcontainers')
   * @param username its user, who needs the REPLICATION attribute; default the DataSource's
   * @param password its password; default the DataSource's
   * @param batchSize most events published per batch
   * @param maxPending most events read and not yet confirmed, held in memory
   * @param idleInterval how long the relay waits when the stream has nothing new
   * @param statusInterval how often the relay confirms its position to the server
   * @param standbyInterval how often a standby tries to take the slot over
   * @param checkpointInterval how often the relay's progress is written where a failover keeps it
   *     (docs/failover.md), bounding the duplicates a failover that loses the slot causes
   * @param waitWarning how long a call of the relay to the server (creating the slot again, starting
   *     the stream, a checkpoint's commit) may wait before it logs what it waits for, again as often
   *     after, and health shows the relay down
   */
  public record Logical(
      @DefaultValue("txbox") String slot,
      @DefaultValue("txbox") String publication,
      @DefaultValue("txbox") String messagePrefix,
      String jdbcUrl,
      String username,
      String password,
      @DefaultValue("1000") int batchSize,
      @DefaultValue("20000") int maxPending,
      @DefaultValue("5ms") Duration idleInterval,
      @DefaultValue("1s") Duration statusInterval,
      @DefaultValue("1s") Duration standbyInterval,
      @DefaultValue("1s") Duration checkpointInterval,
      @DefaultValue("30s") Duration waitWarning) {}

  /** Whether an event is written or relayed through logical decoding, which needs txbox-postgres-cdc. */
  public boolean usesLogicalDecoding() {
    return outbox.writeMode() == WriteMode.WAL_MESSAGE || relay.source() == Source.LOGICAL;
  }

  /**
   * The janitor.
   *
   * @param enabled whether this application runs a janitor; several instances take turns
   * @param outboxRetention how long relayed events are kept
   * @param inboxRetention how long inbox records are kept: longer than any redelivery can come late
   * @param batchSize most rows deleted per statement
   * @param maxBatches most statements per run
   * @param interval time between runs
   */
  public record Janitor(
      @DefaultValue("true") boolean enabled,
      @DefaultValue("1d") Duration outboxRetention,
      @DefaultValue("30d") Duration inboxRetention,
      @DefaultValue("5000") int batchSize,
      @DefaultValue("200") int maxBatches,
      @DefaultValue("1m") Duration interval) {}

  /**
   * The inbox listeners, the {@link InboxListener} beans.
   *
   * @param enabled whether the listeners consume; off, the beans are ignored
   * @param drainTimeout how long shutdown waits for the messages in hand
   * @param transactionManager the bean name of the transaction manager the listeners' transactions
   *     run under, when the application has several; it must manage txbox's DataSource
   * @param batchSize with Kafka, NATS and RabbitMQ, most messages (of one partition, one fetch, or
   *     those waiting) a listener takes in one transaction, 1 to 10,000; 1 gives each message a
   *     transaction of its own
   */
  public record Inbox(
      @DefaultValue("true") boolean enabled,
      @DefaultValue("30s") Duration drainTimeout,
      String transactionManager,
      @DefaultValue("100") int batchSize) {
    public Inbox {
      if (batchSize < 1 || batchSize > 10_000) {
        throw new IllegalArgumentException("txbox setting refused, change txbox.inbox.batch-size: it must be"
            + " 1 to 10000, was " + batchSize);
      }
    }
  }

  /**
   * The health indicator {@code txbox}.
   *
   * @param maxPendingAge the oldest an unrelayed event may be before the application is DOWN
   */
  public record Health(@DefaultValue("5m") Duration maxPendingAge) {}

  /**
   * The Micrometer meters.
   *
   * @param backlogRefresh how long a reading of the backlog gauges is kept before the database is
   *     asked again
   * @param backlogLimitPerBucket most events counted per bucket by the backlog gauges
   * @param slotRefresh with logical decoding, how long a reading of the slot gauges is kept, 100 ms
   *     to 1 h
   */
  public record Metrics(
      @DefaultValue("10s") Duration backlogRefresh,
      @DefaultValue("1000") int backlogLimitPerBucket,
      @DefaultValue("10s") Duration slotRefresh) {}

  /**
   * OpenTelemetry tracing, when the OpenTelemetry API is on the class path (as with the Java agent).
   *
   * @param enabled whether events carry the writer's trace context and the relay and listeners
   *     add their spans to it
   */
  public record Tracing(@DefaultValue("true") boolean enabled) {}
}
