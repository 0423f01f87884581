package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.mariadb.MariaDbInboxStore;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.micrometer.BacklogMeters;
import io.txbox.spi.InboxStore;
import io.txbox.testkit.MemoryTransport;
import io.txbox.testkit.TestMariaDb;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/** The starter on a {@code jdbc:mariadb:} URL: it builds txbox on MariaDB, inbox included, and refuses what MariaDB lacks. */
class StarterMariaDbTest {
  private final String space = "mariadb-shop-" + UUID.randomUUID();
  private TestMariaDb db;
  private ApplicationContextRunner runner;

  @BeforeEach
  void createDatabase() throws Exception {
    db = TestMariaDb.create();
    db.execute("CREATE TABLE orders (id VARCHAR(64) PRIMARY KEY) ENGINE = InnoDB");
    runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.jdbcAutoConfigurations()))
        .withConfiguration(AutoConfigurations.of(TxboxAutoConfiguration.class))
        .withPropertyValues("spring.datasource.url=" + db.jdbcUrl(), "txbox.broker=memory",
            "txbox.memory.space=" + space, "txbox.relay.idle-interval=50ms");
  }

  @AfterEach
  void dropDatabase() {
    db.close();
  }

  @Test
  void onAMariaDbUrlTheStarterMigratesMariaDbAndRelaysWhatCommittedOnly() {
    runner.run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(JdbcOutboxStore.class).hasBean("txboxRelay")
          .hasBean("txboxJanitor");
      assertThat(context.getBean(JdbcOutboxStore.class)).isInstanceOf(MariaDbOutboxStore.class);
      TransactionTemplate transaction = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
      JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
      Outbox outbox = context.getBean(Outbox.class);

      assertThatThrownBy(() -> transaction.executeWithoutResult(status -> {
        place(jdbc, outbox, "order-rolled-back");
        throw new IllegalStateException("the business transaction fails after the send");
      })).hasMessageContaining("fails after the send");
      transaction.executeWithoutResult(status -> place(jdbc, outbox, "order-1"));

      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(MemoryTransport.published(space))
          .extracting(Message::key).contains("order-1"));
      assertThat(MemoryTransport.published(space)).extracting(Message::key).doesNotContain("order-rolled-back");
      assertThat(db.queryLong("SELECT COUNT(*) FROM orders")).isEqualTo(1);
    });
  }

  @Test
  void theMetersAndTheHealthIndicatorWatchTheMariaDbRelay() {
    runner.withConfiguration(AutoConfigurations.of(TxboxMetricsAutoConfiguration.class,
            TxboxHealthAutoConfiguration.class))
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .withPropertyValues("txbox.metrics.backlog-refresh=100ms")
        .run(context -> {
          assertThat(context).hasNotFailed().hasSingleBean(BacklogMeters.class).hasBean("txboxHealthIndicator");
          Outbox outbox = context.getBean(Outbox.class);
          new TransactionTemplate(context.getBean(PlatformTransactionManager.class))
              .executeWithoutResult(status -> place(new JdbcTemplate(context.getBean(DataSource.class)), outbox, "o-9"));
          MeterRegistry registry = context.getBean(MeterRegistry.class);
          // what Boot's metrics auto-configuration does with these beans, on either Boot line
          context.getBeansOfType(MeterFilter.class).values().forEach(registry.config()::meterFilter);
          context.getBeansOfType(MeterBinder.class).values().forEach(binder -> binder.bindTo(registry));
          await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            assertThat(MemoryTransport.published(space)).extracting(Message::key).contains("o-9");
            assertThat(registry.get("txbox.outbox.pending").tag("subscription", "default").gauge().value()).isZero();
          });
          assertThat(registry.get("txbox.outbox.pending").gauge().getId().getTag("outbox"))
              .isEqualTo(db.database() + ".txbox_outbox");
          assertThat(registry.get("txbox.relay.published").counter().count()).isGreaterThanOrEqualTo(1);
        });
  }

  @Test
  void whatMariaDbLacksIsRefusedAtStartNamingTheSetting() {
    refused("txbox.schema=shop", "txbox setting refused, txbox.schema: on MariaDB the tables live in the database"
        + " the JDBC URL names");
    refused("txbox.outbox-partition-size=1000", "txbox setting refused, txbox.outbox-partition-size: MariaDB's"
        + " outbox is not partitioned");
    refused("txbox.relay.listen-jdbc-url=" + db.jdbcUrl(), "txbox setting refused, txbox.relay.listen-jdbc-url:"
        + " MariaDB has no LISTEN/NOTIFY");
    refused("txbox.relay.source=logical", "MariaDB has no logical decoding in txbox: use the table relay");
    refused("txbox.outbox.write-mode=wal-message", "MariaDB has no logical decoding in txbox");
  }

  private void refused(String setting, String message) {
    runner.withPropertyValues(setting).run(context -> assertThat(context).hasFailed()
        .getFailure().rootCause().hasMessageContaining(message));
  }

  @Test
  void anInboxListenerOnMariaDbProcessesEachEventOnceInTheTransactionOfItsSideEffect() throws Exception {
    db.execute("CREATE TABLE shipments (order_id VARCHAR(64)) ENGINE = InnoDB");
    InboxListener inventory = InboxListener.consumer("inventory").from("orders").handler((tx, message, key) -> {
      try (PreparedStatement p = tx.prepareStatement("INSERT INTO shipments (order_id) VALUES (?)")) {
        p.setString(1, message.key());
        p.executeUpdate();
      }
    });
    runner.withBean("inventory", InboxListener.class, () -> inventory).run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(InboxStore.class);
      assertThat(context.getBean(InboxStore.class)).isInstanceOf(MariaDbInboxStore.class);
      TransactionTemplate transaction = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
      JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
      Outbox outbox = context.getBean(Outbox.class);
      Message order = Message.builder().type("OrderPlaced").destination("orders").key("order-1")
          .payload(new byte[] {1}).build();
      // The same event sent twice, as a resend after a crash would deliver it.
      transaction.executeWithoutResult(status -> send(outbox, order));
      transaction.executeWithoutResult(status -> send(outbox, order));

      await().atMost(Duration.ofSeconds(30)).until(() -> MemoryTransport.published(space).size() == 2
          && db.queryLong("SELECT COUNT(*) FROM txbox_inbox") == 1);
      await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5))
          .until(() -> db.queryLong("SELECT COUNT(*) FROM shipments") == 1);
      assertThat(jdbc.queryForObject("SELECT consumer FROM txbox_inbox", String.class)).isEqualTo("inventory");
    });
  }

  private static void place(JdbcTemplate jdbc, Outbox outbox, String orderId) {
    jdbc.update("INSERT INTO orders (id) VALUES (?)", orderId);
    send(outbox, Message.builder().type("OrderPlaced").destination("orders").key(orderId)
        .payload(orderId.getBytes(StandardCharsets.UTF_8)).build());
  }

  private static void send(Outbox outbox, Message message) {
    try {
      outbox.send(message);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
