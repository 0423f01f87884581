package io.txbox.spring;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.txbox.Delivery;
import io.txbox.InboxHandler;
import io.txbox.Janitor;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.cdc.LogicalRelay;
import io.txbox.cdc.LogicalReplication;
import io.txbox.cdc.WalOutboxStore;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.spi.Database;
import io.txbox.jdbc.spi.Database.Capability;
import io.txbox.jdbc.spi.Database.OutboxSettings;
import io.txbox.jdbc.spi.Database.Tables;
import io.txbox.spi.EventWriter;
import io.txbox.spi.InboxStore;
import io.txbox.spi.Metrics;
import io.txbox.spi.OutboxWriter;
import io.txbox.spi.Publisher;
import io.txbox.spi.Subscriber;
import io.txbox.spring.internal.BootJdbc;
import io.txbox.spring.internal.BrokerClients;
import io.txbox.spring.internal.DataSourceConnection;
import io.txbox.spring.internal.DataSourceDatabase;
import io.txbox.spring.internal.LogicalRelayState;
import io.txbox.spring.internal.OpenTelemetryTracing;
import io.txbox.spring.internal.RelaySource;
import io.txbox.spring.internal.Settings;
import io.txbox.spring.internal.SpringTransaction;
import io.txbox.spring.internal.TableRelayState;
import io.txbox.spring.internal.Tracing;
import io.txbox.spring.internal.TransactionalIntake;
import java.time.Clock;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.ClassUtils;
import org.springframework.util.function.SingletonSupplier;

/**
 * Builds txbox from the application's {@code DataSource} and Spring's transaction management:
 *
 * <ul>
 *   <li>an {@link Outbox} whose {@code send(message)} joins the caller's Spring transaction and
 *       refuses to run outside one, and whose {@code sendEvent(event)} writes event objects with
 *       the application's {@code EventTypes} bean, when it has one;
 *   <li>the stores ({@code JdbcOutboxStore}, {@code InboxStore}) of the database the {@code DataSource}
 *       reaches, built through its txbox {@link Database} (PostgreSQL with txbox-postgres, MariaDB with
 *       txbox-mariadb), migrated at start-up unless {@code txbox.migrate=false}; a setting that
 *       database lacks ({@code txbox.schema}, logical decoding, {@code txbox.relay.listen-jdbc-url},
 *       partitions on MariaDB) is refused at start-up, naming it;
 *   <li>a {@link Relay} to the broker, started with the context and drained when it stops
 *       ({@code txbox.relay.enabled}); with {@code txbox.relay.source=logical} and txbox-postgres-cdc,
 *       a {@code LogicalRelay} streaming the replication slot instead;
 *   <li>a {@link Janitor} ({@code txbox.janitor.enabled});
 *   <li>a subscriber for each {@link InboxListener} bean ({@code txbox.inbox.enabled}).
 * </ul>
 *
 * <pre>{@code
 * @Service
 * class OrderService {
 *   @Transactional
 *   public void place(Order order) throws SQLException {
 *     orders.save(order);
 *     outbox.send(Message.builder().type("OrderPlaced").destination("orders").key(order.id())
 *         .payload(json(order), "application/json").build());
 *   }
 * }
 * }</pre>
 *
 * <p>Any bean of these types that the application declares itself replaces the starter's.
 */
// By name, because Boot 4 moved these into new modules and packages: ordering after a class that
// is absent is ignored, so each line's names order it after that line's DataSource.
@AutoConfiguration(afterName = {
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.autoconfigure.transaction.TransactionAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration"})
@ConditionalOnSingleCandidate(DataSource.class)
@EnableConfigurationProperties(TxboxProperties.class)
@Import({BootJdbc.Boot3.class, BootJdbc.Boot4.class})
public class TxboxAutoConfiguration {
  private static final String LOGICAL_DECODING = "io.txbox.cdc.LogicalReplication";
  private static final String WAL_OUTBOX_STORE = "txboxWalOutboxStore";

  /**
   * The database the {@code DataSource} reaches, among the txbox database modules on the class path
   * (txbox-postgres for PostgreSQL, txbox-mariadb for MariaDB): what the stores are built through.
   */
  @Bean
  @ConditionalOnMissingBean
  public Database txboxDatabase(DataSource dataSource, ObjectProvider<DataSourceConnection> connection) {
    return DataSourceDatabase.of(dataSource, connection(connection).url());
  }

  /** How Boot connects the DataSource; nothing known without Boot's JDBC auto-configuration. */
  private static DataSourceConnection connection(ObjectProvider<DataSourceConnection> connection) {
    return connection.getIfAvailable(() -> DataSourceConnection.NONE);
  }

  /**
   * The outbox log, checkpoints, leases and dead letters in the application's database; migrated
   * unless turned off. A setting the database lacks is refused, naming it.
   */
  @Bean
  @ConditionalOnMissingBean
  public JdbcOutboxStore txboxOutboxStore(Database database, DataSource dataSource, TxboxProperties properties,
      ObjectProvider<DataSourceConnection> connection) {
    refuseWhatTheDatabaseLacks(database, properties);
    requireUsableModes(properties);
    OutboxSettings settings = outboxSettings(database, properties, connection(connection));
    JdbcOutboxStore store = Settings.build("txbox", () -> database.outboxStore(dataSource, settings));
    if (properties.migrate()) {
      store.migrate();
    }
    return store;
  }

  private static OutboxSettings outboxSettings(Database database, TxboxProperties properties,
      DataSourceConnection connection) {
    OutboxSettings settings = OutboxSettings.of(tables(properties), properties.buckets());
    if (database.has(Capability.NOTIFY)) {
      String listen = properties.relay().listenJdbcUrl();
      settings = settings.withListening(true, listen == null || listen.isBlank() ? null
          : listenDataSource(database, listen, connection));
    }
    if (database.has(Capability.PARTITIONS)) {
      settings = settings.withPartitions(properties.outboxPartitionSize(), properties.partitionsAhead())
          .withPartitionLockTimeout(properties.partitionLockTimeout());
    }
    return settings;
  }

  /** The relay's LISTEN connection: the DataSource's user and password unless the URL names its own. */
  private static DataSource listenDataSource(Database database, String url, DataSourceConnection connection) {
    try {
      return database.unpooledDataSource(url, connection.username(), connection.password());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("txbox setting refused, change txbox.relay.listen-jdbc-url (a URL that"
          + " reaches the database directly or through a pooler in session mode): " + e.getMessage(), e);
    }
  }

  private static Tables tables(TxboxProperties properties) {
    return new Tables(properties.schema(), properties.tablePrefix());
  }

  /** A setting the database does not honour would be ignored in silence: it is refused instead. */
  private static void refuseWhatTheDatabaseLacks(Database database, TxboxProperties properties) {
    refuse(database, Capability.SCHEMAS, !Tables.DEFAULT_SCHEMA.equals(properties.schema()), "txbox.schema");
    refuse(database, Capability.LOGICAL_DECODING, properties.usesLogicalDecoding(),
        "txbox.relay.source / txbox.outbox.write-mode");
    refuse(database, Capability.NOTIFY, properties.relay().listenJdbcUrl() != null, "txbox.relay.listen-jdbc-url");
    refuse(database, Capability.PARTITIONS, properties.outboxPartitionSize() > 0, "txbox.outbox-partition-size");
  }

  /** Refuses {@code setting}, when given, in the database's own words ({@link Database#lacks}). */
  private static void refuse(Database database, Capability needed, boolean given, String setting) {
    if (given) {
      database.lacks(needed).ifPresent(why -> {
        throw new IllegalArgumentException("txbox setting refused, " + setting + ": " + why + "; remove it");
      });
    }
  }

  /** The inbox records; its tables come with the outbox store's migration. */
  @Bean
  @ConditionalOnMissingBean
  public InboxStore txboxInboxStore(Database database, TxboxProperties properties) {
    return Settings.build("txbox", () -> database.inboxStore(tables(properties)));
  }

  private static void requireUsableModes(TxboxProperties properties) {
    if (properties.outbox().writeMode() == TxboxProperties.WriteMode.WAL_MESSAGE
        && properties.relay().source() != TxboxProperties.Source.LOGICAL) {
      throw new IllegalArgumentException("txbox setting refused, change txbox.relay.source to logical or"
          + " txbox.outbox.write-mode to table: WAL messages (txbox.outbox.write-mode=wal-message) are relayed"
          + " only from the replication slot, never by the table relay");
    }
    if (properties.usesLogicalDecoding() && !ClassUtils.isPresent(LOGICAL_DECODING, null)) {
      throw new IllegalStateException("txbox.relay.source=logical and txbox.outbox.write-mode=wal-message need"
          + " txbox-postgres-cdc: add the dependency io.txbox:txbox-postgres-cdc");
    }
  }

  /**
   * The outbox, joining the Spring transaction the caller is in; with the application's
   * {@link EventWriter} bean (such as {@code txbox-jackson}'s {@code EventTypes}) when it has one,
   * for {@link Outbox#sendEvent(Object)}. With {@code txbox.outbox.write-mode=wal-message} it writes
   * WAL messages instead of rows.
   */
  @Bean
  @ConditionalOnMissingBean
  public Outbox txboxOutbox(JdbcOutboxStore store, DataSource dataSource, ObjectProvider<Tracing> tracing,
      ObjectProvider<EventWriter> events, @Qualifier(WAL_OUTBOX_STORE) ObjectProvider<OutboxWriter> walMessages) {
    return outbox(walMessages.getIfAvailable(store::writer), dataSource, tracing, events);
  }

  private static Outbox outbox(OutboxWriter store, DataSource dataSource, ObjectProvider<Tracing> tracing,
      ObjectProvider<EventWriter> events) {
    Outbox.Builder outbox = Outbox.builder(store)
        .currentTransaction(new SpringTransaction(dataSource))
        .headers(tracing.getIfAvailable(() -> Tracing.NONE).outgoingHeaders());
    events.ifAvailable(outbox::events);
    return outbox.build();
  }

  /**
   * Logical decoding, with txbox-postgres-cdc on the class path: the slot and publication
   * (created by the migration when events go through them), the WAL-message store and the
   * logical relay.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = LOGICAL_DECODING)
  @Conditional(RelaySource.UsesLogicalDecoding.class)
  static class LogicalDecodingConfiguration {
    /** The slot and publication; migrated when this application writes or relays through them. */
    @Bean
    @ConditionalOnMissingBean
    LogicalReplication txboxLogicalReplication(JdbcOutboxStore store, DataSource dataSource,
        TxboxProperties properties) {
      TxboxProperties.Logical l = properties.logical();
      LogicalReplication replication = Settings.build("txbox.logical", () -> LogicalReplication.builder(dataSource, store)
          .slot(l.slot())
          .publication(l.publication())
          .messagePrefix(l.messagePrefix())
          .build());
      if (properties.migrate()) {
        replication.migrate();
      }
      return replication;
    }

    /** What {@code Outbox.send} writes to with {@code txbox.outbox.write-mode=wal-message}. */
    @Bean(WAL_OUTBOX_STORE)
    @Conditional(RelaySource.WritesWalMessages.class)
    OutboxWriter txboxWalOutboxStore(LogicalReplication replication) {
      return WalOutboxStore.withPrefix(replication.messagePrefix());
    }

    /** The logical relay, started with the context: it streams the slot, or stands by while another does. */
    @Bean
    @Conditional(RelaySource.Logical.class)
    @ConditionalOnProperty(name = "txbox.relay.enabled", matchIfMissing = true)
    TxboxService<LogicalRelay> txboxLogicalRelay(LogicalReplication replication, TxboxProperties properties,
        Environment environment, ObjectProvider<Metrics> metrics, ObjectProvider<Tracing> tracing,
        ObjectProvider<DataSourceConnection> dataSourceConnection) {
      TxboxProperties.Logical l = properties.logical();
      DataSourceConnection boot = connection(dataSourceConnection);
      String jdbcUrl = l.jdbcUrl() != null ? l.jdbcUrl() : boot.url();
      if (jdbcUrl == null) {
        throw new IllegalArgumentException("txbox setting refused, set txbox.logical.jdbc-url: the logical relay"
            + " opens a replication connection of its own, and the DataSource's URL is not known either"
            + " (spring.datasource.url, or a service connection)");
      }
      Properties connection = new Properties();
      putIfSet(connection, "user", l.username(), boot.username());
      putIfSet(connection, "password", l.password(), boot.password());
      return new TxboxService<>("txbox logical relay", () -> {
        Publisher publisher = relayPublisher(properties, environment, tracing);
        try {
          return Settings.build("txbox.logical", () -> LogicalRelay.builder(replication, publisher)
              .connection(jdbcUrl, connection)
              .batchSize(l.batchSize())
              .maxPending(l.maxPending())
              .idleInterval(l.idleInterval())
              .statusInterval(l.statusInterval())
              .standbyInterval(l.standbyInterval())
              .checkpointInterval(l.checkpointInterval())
              .waitWarning(l.waitWarning())
              .drainTimeout(properties.relay().drainTimeout())
              .delivery(properties.relay().delivery())
              .metrics(metrics.getIfAvailable(() -> Metrics.NONE))
              .build()).start();
        } catch (RuntimeException e) {
          publisher.close(); // a relay that never started does not close it
          throw e;
        }
      });
    }

    /** The health indicator's and meters' view of the logical relay and its slot. */
    @Bean
    @Conditional(RelaySource.Logical.class)
    @ConditionalOnMissingBean
    RelayState txboxRelayState(LogicalReplication replication, ObjectProvider<TxboxService<LogicalRelay>> relay,
        TxboxProperties properties) {
      return new LogicalRelayState(replication, () -> Optional.ofNullable(relay.getIfAvailable()),
          properties.health().maxPendingAge());
    }

    private static void putIfSet(Properties connection, String key, String value, String fallback) {
      String chosen = value != null ? value : fallback;
      if (chosen != null) {
        connection.setProperty(key, chosen);
      }
    }
  }

  /** The broker's publisher, with spans when tracing is on. */
  private static Publisher publisher(TxboxProperties properties, Environment environment,
      ObjectProvider<Tracing> tracing) {
    BrokerClients broker = broker(properties, environment);
    Tracing traces = tracing.getIfAvailable(() -> Tracing.NONE);
    return traces.publisher(broker.publisher(traces.sendScope()), broker.system());
  }

  /**
   * The broker's publisher for exactly-once delivery, or the broker's refusal (it fails the start).
   * Its sends enter the messages' trace context; no publish span wraps the transaction.
   */
  private static Publisher exactlyOncePublisher(TxboxProperties properties, Environment environment,
      ObjectProvider<Tracing> tracing) {
    Tracing traces = tracing.getIfAvailable(() -> Tracing.NONE);
    return broker(properties, environment).exactlyOncePublisher(traces.sendScope());
  }

  /** The relays' publisher: a transactional one when txbox.relay.delivery is exactly-once, or the broker's refusal. */
  private static Publisher relayPublisher(TxboxProperties properties, Environment environment,
      ObjectProvider<Tracing> tracing) {
    return properties.relay().delivery() == Delivery.EXACTLY_ONCE
        ? exactlyOncePublisher(properties, environment, tracing)
        : publisher(properties, environment, tracing);
  }

  /** The broker's clients; Kafka's servers default to Spring's own Kafka setting. */
  private static BrokerClients broker(TxboxProperties properties, Environment environment) {
    return BrokerClients.of(properties, environment);
  }

  private static PlatformTransactionManager transactionManager(ListableBeanFactory beans, TxboxProperties properties) {
    String name = properties.inbox().transactionManager();
    if (name != null) {
      return beans.getBean(name, PlatformTransactionManager.class);
    }
    String[] names = beans.getBeanNamesForType(PlatformTransactionManager.class);
    if (names.length != 1) {
      throw new IllegalStateException("txbox's InboxListeners need one transaction manager, and the"
          + " application has " + (names.length == 0 ? "none" : String.join(", ", names)) + ": set"
          + " txbox.inbox.transaction-manager to the bean name of the one that manages txbox's DataSource");
    }
    return beans.getBean(names[0], PlatformTransactionManager.class);
  }

  /**
   * Trace context in the events' headers and spans for publish and handle, when the OpenTelemetry
   * API is present: the application's {@code OpenTelemetry} bean, or the global one (which the
   * Java agent sets).
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.opentelemetry.api.OpenTelemetry")
  @ConditionalOnProperty(name = "txbox.tracing.enabled", matchIfMissing = true)
  static class OpenTelemetryConfiguration {
    @Bean
    @ConditionalOnMissingBean
    Tracing txboxTracing(ObjectProvider<OpenTelemetry> openTelemetry) {
      // Asked for at first use, not now: GlobalOpenTelemetry.get() before the application set
      // its own would fix the global to a no-op for good.
      return new OpenTelemetryTracing(SingletonSupplier.of(() -> openTelemetry.getIfAvailable(GlobalOpenTelemetry::get)));
    }
  }

  /** The relay, started with the application context and drained when it stops. */
  @Bean
  @Conditional(RelaySource.Table.class)
  @ConditionalOnProperty(name = "txbox.relay.enabled", matchIfMissing = true)
  public TxboxService<Relay> txboxRelay(
      JdbcOutboxStore store, TxboxProperties properties, Environment environment,
      ObjectProvider<Metrics> metrics, ObjectProvider<Tracing> tracing) {
    TxboxProperties.Relay r = properties.relay();
    return new TxboxService<>("txbox relay", () -> {
      Publisher publisher = relayPublisher(properties, environment, tracing);
      Relay.Builder b = Relay.builder(store.relay(), publisher)
          .delivery(r.delivery())
          .subscription(r.subscription())
          .batchSize(r.batchSize())
          .idleInterval(r.idleInterval())
          .heartbeatInterval(r.heartbeatInterval())
          .leaseDuration(r.leaseDuration())
          .drainTimeout(r.drainTimeout())
          .stallWarning(r.stallWarning())
          .metrics(metrics.getIfAvailable(() -> Metrics.NONE));
      if (r.instanceId() != null) {
        b.instanceId(r.instanceId());
      }
      try {
        return Settings.build("txbox.relay", b::build).start();
      } catch (RuntimeException e) {
        publisher.close(); // a relay that never started does not close it
        throw e;
      }
    });
  }

  /** The health indicator's and meters' view of the table relay and its backlog. */
  @Bean
  @Conditional(RelaySource.Table.class)
  @ConditionalOnMissingBean
  public RelayState txboxRelayState(JdbcOutboxStore store, TxboxProperties properties,
      ObjectProvider<TxboxService<Relay>> relay) {
    return new TableRelayState(store.relay(), properties.relay().subscription(),
        () -> Optional.ofNullable(relay.getIfAvailable()), properties.health().maxPendingAge(),
        properties.metrics().backlogLimitPerBucket(), Clock.systemUTC());
  }

  /** The janitor, deleting relayed events and old inbox records while the context runs. */
  @Bean
  @ConditionalOnProperty(name = "txbox.janitor.enabled", matchIfMissing = true)
  public TxboxService<Janitor> txboxJanitor(JdbcOutboxStore store, TxboxProperties properties) {
    TxboxProperties.Janitor j = properties.janitor();
    Janitor janitor = Settings.build("txbox.janitor", () -> Janitor.builder(store.janitor())
        .outboxRetention(j.outboxRetention())
        .inboxRetention(j.inboxRetention())
        .batchSize(j.batchSize())
        .maxBatches(j.maxBatches())
        .interval(j.interval())
        .build());
    return new TxboxService<>("txbox janitor", janitor::start);
  }

  /** A subscriber for each {@link InboxListener} bean, each message in a Spring transaction. */
  @Bean
  @ConditionalOnBean(InboxListener.class)
  @ConditionalOnProperty(name = "txbox.inbox.enabled", matchIfMissing = true)
  public InboxListeners txboxInboxListeners(
      List<InboxListener> listeners, InboxStore store, DataSource dataSource,
      ListableBeanFactory beans, TxboxProperties properties, Environment environment,
      ObjectProvider<Tracing> tracing) {
    TransactionTemplate transactions = new TransactionTemplate(transactionManager(beans, properties));
    return new InboxListeners(listeners, listener -> {
      BrokerClients broker = broker(properties, environment);
      InboxHandler handler = tracing.getIfAvailable(() -> Tracing.NONE).handler(listener.consumer(), listener.handler());
      Subscriber subscriber = broker.subscriber(listener, new TransactionalIntake(
          listener.consumer(), handler, store, dataSource, transactions));
      return subscriber.start();
    });
  }
}
