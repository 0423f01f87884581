package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.Janitor;
import io.txbox.Relay;
import io.txbox.cdc.LogicalRelay;
import io.txbox.cdc.LogicalReplication;
import io.txbox.micrometer.BacklogMeters;
import io.txbox.micrometer.SlotMeters;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.support.SubscriberBuilder;
import io.txbox.spring.internal.DataSourceConnection;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.ResolvableType;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

/** How the starter reads its settings and refuses bad ones, in contexts against PostgreSQL. */
class StarterConfigurationTest {
  private TestDatabase db;
  private ApplicationContextRunner runner;

  @BeforeEach
  void createSchema() {
    db = TestDatabase.create();
    runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.jdbcAutoConfigurations()))
        .withConfiguration(AutoConfigurations.of(TxboxAutoConfiguration.class))
        .withPropertyValues("spring.datasource.url=" + TestDatabase.jdbcUrl(), "txbox.schema=" + db.schema());
  }

  @AfterEach
  void dropSchema() {
    db.close();
  }

  @Test
  void everyDefaultIsTheDefaultOfTheBuilderItFeeds() {
    TxboxProperties p = new Binder(new MapConfigurationPropertySource())
        .bindOrCreate("txbox", TxboxProperties.class);
    assertThat(p.schema()).isEqualTo(PostgresOutboxStore.DEFAULT_SCHEMA);
    assertThat(p.tablePrefix()).isEqualTo(PostgresOutboxStore.DEFAULT_TABLE_PREFIX);
    assertThat(p.buckets()).isEqualTo(PostgresOutboxStore.DEFAULT_BUCKETS);
    assertThat(p.relay().subscription()).isEqualTo(Relay.DEFAULT_SUBSCRIPTION);
    assertThat(p.relay().batchSize()).isEqualTo(Relay.DEFAULT_BATCH_SIZE);
    assertThat(p.relay().idleInterval()).isEqualTo(Relay.DEFAULT_IDLE_INTERVAL);
    assertThat(p.relay().heartbeatInterval()).isEqualTo(Relay.DEFAULT_HEARTBEAT_INTERVAL);
    assertThat(p.relay().leaseDuration()).isEqualTo(Relay.DEFAULT_LEASE_DURATION);
    assertThat(p.relay().drainTimeout()).isEqualTo(Relay.DEFAULT_DRAIN_TIMEOUT);
    assertThat(p.relay().stallWarning()).isEqualTo(Relay.DEFAULT_STALL_WARNING);
    assertThat(p.janitor().outboxRetention()).isEqualTo(Janitor.DEFAULT_OUTBOX_RETENTION);
    assertThat(p.janitor().inboxRetention()).isEqualTo(Janitor.DEFAULT_INBOX_RETENTION);
    assertThat(p.janitor().batchSize()).isEqualTo(Janitor.DEFAULT_BATCH_SIZE);
    assertThat(p.janitor().maxBatches()).isEqualTo(Janitor.DEFAULT_MAX_BATCHES);
    assertThat(p.janitor().interval()).isEqualTo(Janitor.DEFAULT_INTERVAL);
    assertThat(p.inbox().drainTimeout()).isEqualTo(SubscriberBuilder.DEFAULT_DRAIN_TIMEOUT);
    assertThat(p.inbox().batchSize()).isEqualTo(SubscriberBuilder.DEFAULT_BATCH_SIZE);
    assertThat(p.metrics().backlogRefresh()).isEqualTo(Duration.ofSeconds(BacklogMeters.DEFAULT_REFRESH_SECONDS));
    assertThat(p.metrics().backlogLimitPerBucket()).isEqualTo(BacklogMeters.DEFAULT_LIMIT_PER_BUCKET);
    assertThat(p.migrate()).isTrue();
    assertThat(p.tracing().enabled()).isTrue();
    assertThat(p.outbox().writeMode()).isEqualTo(TxboxProperties.WriteMode.TABLE);
    assertThat(p.outboxPartitionSize()).isZero();
    assertThat(p.partitionsAhead()).isEqualTo(PostgresOutboxStore.DEFAULT_PARTITIONS_AHEAD);
    assertThat(p.partitionLockTimeout()).isEqualTo(PostgresOutboxStore.DEFAULT_PARTITION_LOCK_TIMEOUT);
    assertThat(p.relay().source()).isEqualTo(TxboxProperties.Source.TABLE);
    assertThat(p.logical().slot()).isEqualTo(LogicalReplication.DEFAULT_SLOT);
    assertThat(p.logical().publication()).isEqualTo(LogicalReplication.DEFAULT_PUBLICATION);
    assertThat(p.logical().messagePrefix()).isEqualTo(LogicalReplication.DEFAULT_MESSAGE_PREFIX);
    assertThat(p.logical().batchSize()).isEqualTo(LogicalRelay.DEFAULT_BATCH_SIZE);
    assertThat(p.logical().maxPending()).isEqualTo(LogicalRelay.DEFAULT_MAX_PENDING);
    assertThat(p.metrics().slotRefresh()).isEqualTo(Duration.ofSeconds(SlotMeters.DEFAULT_REFRESH_SECONDS));
  }

  @Test
  void walMessagesWithTheTableRelayAreRefused() {
    runner.withPropertyValues("txbox.broker=kafka", "txbox.outbox.write-mode=wal-message").run(context ->
        assertThat(context).getFailure().rootCause()
            .hasMessageContaining("change txbox.relay.source to logical or txbox.outbox.write-mode to table"));
  }

  @Test
  void theLogicalRelayOnAServerWithoutLogicalWalLevelNamesTheSetting() {
    // The machine's PostgreSQL runs with wal_level=replica.
    runner.withPropertyValues("txbox.broker=kafka", "txbox.relay.source=logical").run(context ->
        assertThat(context).getFailure().rootCause().hasMessageContaining("wal_level"));
  }

  @Test
  void aRefusedSettingStopsStartUpAndNamesTheProperty() {
    runner.withPropertyValues("txbox.broker=kafka", "txbox.relay.batch-size=0").run(context ->
        assertThat(context).getFailure()
            .hasStackTraceContaining("txbox setting refused, change txbox.relay.batch-size: batchSize must be")
            .hasStackTraceContaining("was 0"));
  }

  @Test
  void exactlyOnceDeliveryWithABrokerThatCannotStopsStartUpSayingWhatToUseInstead() {
    runner.withPropertyValues("txbox.broker=rabbitmq", "txbox.rabbitmq.uri=amqp://localhost:5672",
        "txbox.relay.delivery=exactly-once").run(context ->
        assertThat(context).getFailure()
            .hasStackTraceContaining("delivery exactly-once is not possible with rabbitmq")
            .hasStackTraceContaining("Use delivery at-least-once"));
  }

  @Test
  void anOutboxPartitionTooSmallNamesTheProperty() {
    runner.withPropertyValues("txbox.broker=kafka", "txbox.outbox-partition-size=10").run(context ->
        assertThat(context).getFailure()
            .hasStackTraceContaining("change txbox.outbox-partition-size: outboxPartitionSize must be 0"));
  }

  @Test
  void aListenerBatchSizeOutOfBoundsNamesTheProperty() {
    runner.withPropertyValues("txbox.broker=kafka", "txbox.inbox.batch-size=0").run(context ->
        assertThat(context).getFailure()
            .hasStackTraceContaining("txbox setting refused, change txbox.inbox.batch-size: it must be 1 to 10000,"
                + " was 0"));
  }

  @Test
  void aBrokerModulesSettingsAreItsOwnAndAMisspeltOneIsNamed() {
    // MemoryTransport is registered by this module's test resources only, as a fifth broker module would be
    runner.withPropertyValues("txbox.broker=memory", "txbox.memory.spcae=orders").run(context ->
        assertThat(context).getFailure().hasStackTraceContaining(
            "txbox.memory.spcae is no setting of memory: its settings are [space, max-message-size, token, client]"));
    runner.withPropertyValues("txbox.broker=memory", "txbox.memory.max-message-size=0").run(context ->
        assertThat(context).getFailure().hasStackTraceContaining(
            "invalid txbox.memory.max-message-size: it must be 1 or more, was 0"));
    runner.withPropertyValues("txbox.broker=nast").run(context -> assertThat(context).getFailure()
        .hasStackTraceContaining("txbox setting refused, change txbox.broker: no broker named 'nast' is installed")
        .hasStackTraceContaining("installed: [kafka, memory, nats, rabbitmq, sqs]"));
  }

  @Test
  void kafkaClientPropertiesAreCheckedAgainstTheClientAtStartUp() {
    runner.withPropertyValues("txbox.broker=kafka", "txbox.kafka.producer.lnger.ms=5").run(context ->
        assertThat(context).getFailure().hasStackTraceContaining(
            "txbox.kafka.producer: unknown producer property 'lnger.ms': did you mean 'linger.ms'?"));
    runner.withPropertyValues("txbox.broker=kafka", "txbox.relay.enabled=false", "txbox.janitor.enabled=false",
            "txbox.kafka.consumer.max.poll.records=many")
        .withUserConfiguration(OneInventory.class)
        .run(context -> assertThat(context).getFailure().hasStackTraceContaining(
            "consumer property max.poll.records: Invalid value many for configuration max.poll.records:"
                + " Not a number of type INT"));
  }

  @Test
  void withSeveralBrokerModulesPresentTheBrokerMustBeNamed() {
    runner.run(context -> assertThat(context).getFailure()
        .rootCause().hasMessageContaining("set txbox.broker"));
  }

  @Test
  void migrationTurnedOffLeavesTheTablesToFlywayOrLiquibase() {
    runner.withPropertyValues("txbox.migrate=false", "txbox.relay.enabled=false", "txbox.janitor.enabled=false")
        .run(context -> {
          assertThat(context).hasNotFailed().hasSingleBean(io.txbox.Outbox.class);
          assertThat(tableExists("txbox_outbox")).isFalse();
        });
    runner.withPropertyValues("txbox.relay.enabled=false", "txbox.janitor.enabled=false")
        .run(context -> assertThat(tableExists("txbox_outbox")).isTrue());
  }

  @Test
  void twoListenersWithOneConsumerNameAreRefused() {
    runner.withPropertyValues("txbox.broker=kafka", "txbox.relay.enabled=false")
        .withUserConfiguration(TwoInventories.class)
        .run(context -> assertThat(context).getFailure()
            .rootCause().hasMessageContaining("share the consumer name 'inventory'"));
  }

  @Test
  void withTwoTransactionManagersTheListenersNeedToBeToldWhichOne() {
    ApplicationContextRunner twoManagers = runner
        .withPropertyValues("txbox.broker=kafka", "txbox.relay.enabled=false", "txbox.janitor.enabled=false",
            "txbox.kafka.bootstrap-servers=" + KafkaBroker.shared().bootstrapServers())
        .withUserConfiguration(OneInventory.class, TwoTransactionManagers.class);
    twoManagers.run(context -> assertThat(context).getFailure()
        .rootCause().hasMessageContaining("set txbox.inbox.transaction-manager")
        .hasMessageContaining("shopTransactions, reportTransactions"));
    twoManagers.withPropertyValues("txbox.inbox.transaction-manager=shopTransactions")
        .run(context -> assertThat(context).hasNotFailed());
  }

  @Test
  void aListenerThatReadsFromNothingIsRefused() {
    assertThatThrownBy(() -> InboxListener.consumer("inventory").handler((m, k) -> {}))
        .hasMessageContaining("reads from nothing").hasMessageContaining("from(...)");
    assertThatThrownBy(() -> InboxListener.consumer("in ventory").from("orders").handler((m, k) -> {}))
        .hasMessageContaining("consumer must be 1 to 100 characters");
  }

  private boolean tableExists(String table) {
    try (var c = db.dataSource().getConnection();
        var rs = c.getMetaData().getTables(null, db.schema(), table, null)) {
      return rs.next();
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class OneInventory {
    @Bean
    InboxListener inventory() {
      return InboxListener.consumer("inventory").from("orders-" + java.util.UUID.randomUUID()).handler((m, k) -> {});
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class TwoTransactionManagers {
    @Bean
    PlatformTransactionManager shopTransactions(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }

    @Bean
    PlatformTransactionManager reportTransactions(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class TwoInventories {
    @Bean
    InboxListener first() {
      return InboxListener.consumer("inventory").from("orders").handler((m, k) -> {});
    }

    @Bean
    InboxListener second() {
      return InboxListener.consumer("inventory").from("returns").handler((m, k) -> {});
    }
  }

  /** The analyzers Spring Boot asks when a start fails, by name, as it finds them in {@code META-INF/spring.factories}. */
  private static List<String> registered() throws Exception {
    List<String> names = new java.util.ArrayList<>();
    var resources = StarterConfigurationTest.class.getClassLoader().getResources(SpringFactoriesLoader.FACTORIES_RESOURCE_LOCATION);
    while (resources.hasMoreElements()) {
      java.util.Properties factories = new java.util.Properties();
      try (var in = resources.nextElement().openStream()) {
        factories.load(in);
      }
      String analyzers = factories.getProperty(FailureAnalyzer.class.getName(), "");
      for (String name : analyzers.split(",")) {
        names.add(name.strip());
      }
    }
    return names;
  }

  private static FailureAnalysis analysis(Throwable failure) {
    return new TxboxFailureAnalyzer().analyze(failure);
  }

  @Test
  void springBootFindsTheAnalyzer() throws Exception {
    assertThat(registered()).contains(TxboxFailureAnalyzer.class.getName());
  }

  @Test
  void aRefusedSettingIsTheFirstScreenWithItsFixNotTheLastCausedByOfFive() {
    runner.withPropertyValues("txbox.broker=kafka", "txbox.kafka.producer.lnger.ms=5").run(context -> {
      Throwable failure = context.getStartupFailure();
      assertThat(failure).isNotNull();
      FailureAnalysis analysis = analysis(failure);
      assertThat(analysis.getDescription()).startsWith("txbox refused to start: ")
          .contains("txbox.kafka.producer: unknown producer property 'lnger.ms': did you mean 'linger.ms'?");
      assertThat(analysis.getAction()).contains("docs/spring.md lists every txbox property");
    });
    runner.withPropertyValues("txbox.broker=nast").run(context -> assertThat(analysis(context.getStartupFailure())
        .getDescription()).contains("change txbox.broker: no broker named 'nast' is installed"));
  }

  @Test
  void aFailureTxboxDidNotThrowIsLeftToSpringBoot() {
    NumberFormatException notOurs = new NumberFormatException("For input string: \"many\"");
    notOurs.setStackTrace(new StackTraceElement[] {new StackTraceElement("java.lang.Integer", "parseInt", null, 1)});
    assertThat(analysis(new RuntimeException("bean creation failed", notOurs))).isNull();
  }

  @Test
  void theRelayAndItsStateArePublicBeansAndTheStateCanBeReplaced() {
    runner.withPropertyValues("txbox.broker=kafka", "txbox.janitor.enabled=false",
        "txbox.kafka.bootstrap-servers=" + KafkaBroker.shared().bootstrapServers(), "txbox.migrate=true").run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBeanNamesForType(ResolvableType.forClassWithGenerics(TxboxService.class, Relay.class)))
              .containsExactly("txboxRelay");
          assertThat(context.getBean(RelayState.class).getClass().getName()).contains(".internal.");
        });
    RelayState mine = new RelayState() {
      @Override
      public boolean isTroubled() {
        return false;
      }

      @Override
      public boolean report(Map<String, Object> details) {
        details.put("judged by", "the application");
        return true;
      }
    };
    runner.withPropertyValues("txbox.broker=kafka", "txbox.janitor.enabled=false",
            "txbox.kafka.bootstrap-servers=" + KafkaBroker.shared().bootstrapServers(), "txbox.migrate=true")
        .withBean(RelayState.class, () -> mine).run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(RelayState.class)).isSameAs(mine);
        });
  }

  @Test
  void txboxsOwnConnectionsTakeTheDataSourcesSettingsAsBootBoundThem() {
    runner.withPropertyValues("txbox.broker=kafka", "txbox.relay.enabled=false", "txbox.janitor.enabled=false",
        "spring.datasource.username=postgres", "spring.datasource.password=s3cret").run(context -> {
          assertThat(context).hasNotFailed();
          DataSourceConnection connection = context.getBean(DataSourceConnection.class);
          assertThat(connection.url()).isEqualTo(TestDatabase.jdbcUrl());
          assertThat(connection.username()).isEqualTo("postgres");
          assertThat(connection.password()).isEqualTo("s3cret");
          assertThat(connection.toString()).doesNotContain("s3cret");
        });
  }

  @Test
  void aListenUrlOfAnotherDatabaseIsRefusedNamingTheSetting() {
    runner.withPropertyValues("txbox.broker=kafka", "txbox.relay.enabled=false",
        "txbox.relay.listen-jdbc-url=jdbc:mariadb://db:3306/shop").run(context -> assertThat(context).getFailure()
            .hasStackTraceContaining("txbox setting refused, change txbox.relay.listen-jdbc-url (a URL that reaches"
                + " the database directly or through a pooler in session mode): not a PostgreSQL JDBC URL: give one"
                + " such as jdbc:postgresql://host:5432/database"));
  }
}
