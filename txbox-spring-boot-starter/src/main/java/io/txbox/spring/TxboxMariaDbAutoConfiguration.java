package io.txbox.spring;

import io.txbox.Janitor;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.mariadb.MariaDbInboxStore;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.spi.EventWriter;
import io.txbox.spi.Metrics;
import io.txbox.spring.internal.ContextBound;
import io.txbox.spring.internal.DataSourceUrl;
import io.txbox.spring.internal.InboxListeners;
import io.txbox.spring.internal.RelayState;
import io.txbox.spring.internal.Settings;
import io.txbox.spring.internal.Tracing;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;

/**
 * txbox on MariaDB, chosen when {@code spring.datasource.url} is a {@code jdbc:mariadb:} URL and
 * {@code txbox-mariadb} is on the class path: the {@link MariaDbOutboxStore} (migrated at
 * start-up unless {@code txbox.migrate=false}), an {@link Outbox} joining the caller's Spring
 * transaction, the table relay, the janitor, the {@link MariaDbInboxStore} and a subscriber for
 * each {@link InboxListener} bean, with the same {@code txbox.*} settings as on PostgreSQL; the
 * meters and the health indicator follow, as on PostgreSQL.
 *
 * <pre>{@code
 * spring.datasource.url=jdbc:mariadb://db:3306/shop
 * txbox.broker=kafka
 * }</pre>
 *
 * <p>What MariaDB does not have in txbox is refused at start-up, naming the setting:
 * {@code txbox.schema} (the tables live in the URL's database), logical decoding and outbox
 * partitions.
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.autoconfigure.transaction.TransactionAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration"})
@ConditionalOnClass(name = "io.txbox.mariadb.MariaDbOutboxStore")
@ConditionalOnSingleCandidate(DataSource.class)
@Conditional(DataSourceUrl.MariaDb.class)
@EnableConfigurationProperties(TxboxProperties.class)
@Import(TxboxAutoConfiguration.OpenTelemetryConfiguration.class)
public class TxboxMariaDbAutoConfiguration {

  /** The outbox log, checkpoints, leases and dead letters on MariaDB; migrated unless turned off. */
  @Bean
  @ConditionalOnMissingBean
  public MariaDbOutboxStore txboxOutboxStore(DataSource dataSource, TxboxProperties properties) {
    refuseWhatMariaDbLacks(properties);
    MariaDbOutboxStore store = Settings.build("txbox", () -> MariaDbOutboxStore.builder(dataSource)
        .tablePrefix(properties.tablePrefix())
        .buckets(properties.buckets())
        .build());
    if (properties.migrate()) {
      store.migrate();
    }
    return store;
  }

  /** The outbox, joining the Spring transaction the caller is in. */
  @Bean
  @ConditionalOnMissingBean
  public Outbox txboxOutbox(MariaDbOutboxStore store, DataSource dataSource, ObjectProvider<Tracing> tracing,
      ObjectProvider<EventWriter> events) {
    return TxboxAutoConfiguration.outbox(store, dataSource, tracing, events);
  }

  /** The inbox records; its tables come with the outbox store's migration. */
  @Bean
  @ConditionalOnMissingBean
  public MariaDbInboxStore txboxInboxStore(TxboxProperties properties) {
    return Settings.build("txbox", () -> MariaDbInboxStore.builder().tablePrefix(properties.tablePrefix()).build());
  }

  /** A subscriber for each {@link InboxListener} bean, each message in a Spring transaction. */
  @Bean
  @ConditionalOnBean(InboxListener.class)
  @ConditionalOnProperty(name = "txbox.inbox.enabled", matchIfMissing = true)
  public InboxListeners txboxInboxListeners(
      List<InboxListener> listeners, MariaDbInboxStore store, DataSource dataSource,
      ListableBeanFactory beans, TxboxProperties properties, Environment environment,
      ObjectProvider<Tracing> tracing) {
    return TxboxAutoConfiguration.inboxListeners(listeners, store, dataSource, beans, properties, environment, tracing);
  }

  /** The table relay, started with the application context and drained when it stops. */
  @Bean
  @ConditionalOnProperty(name = "txbox.relay.enabled", matchIfMissing = true)
  public ContextBound<Relay> txboxRelay(MariaDbOutboxStore store, TxboxProperties properties,
      Environment environment, ObjectProvider<Metrics> metrics, ObjectProvider<Tracing> tracing) {
    return TxboxAutoConfiguration.relay(store, properties, environment, metrics, tracing);
  }

  /** The health indicator's and meters' view of the relay and its backlog. */
  @Bean
  public RelayState txboxRelayState(MariaDbOutboxStore store, TxboxProperties properties,
      ObjectProvider<ContextBound<Relay>> relay) {
    return TxboxAutoConfiguration.tableRelayState(store, properties, relay);
  }

  /** The janitor, deleting relayed events while the context runs. */
  @Bean
  @ConditionalOnProperty(name = "txbox.janitor.enabled", matchIfMissing = true)
  public ContextBound<Janitor> txboxJanitor(MariaDbOutboxStore store, TxboxProperties properties) {
    return TxboxAutoConfiguration.janitor(store, properties);
  }

  /** A setting that only PostgreSQL honours would be ignored in silence here: it is refused instead. */
  private static void refuseWhatMariaDbLacks(TxboxProperties properties) {
    refuse(!"public".equals(properties.schema()), "txbox.schema", "on MariaDB the tables live in the database"
        + " spring.datasource.url names: remove it");
    refuse(properties.usesLogicalDecoding(), "txbox.relay.source / txbox.outbox.write-mode",
        "logical decoding is PostgreSQL's: use the table relay (the default)");
    refuse(properties.relay().listenJdbcUrl() != null, "txbox.relay.listen-jdbc-url",
        "MariaDB has no LISTEN/NOTIFY: the relay polls");
    refuse(properties.outboxPartitionSize() > 0, "txbox.outbox-partition-size",
        "MariaDB's outbox is not partitioned: remove it");
  }

  private static void refuse(boolean given, String setting, String why) {
    if (given) {
      throw new IllegalArgumentException("txbox setting refused, " + setting + ": " + why);
    }
  }
}
