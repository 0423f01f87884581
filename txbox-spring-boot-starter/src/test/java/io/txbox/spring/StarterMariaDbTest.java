package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.testkit.MemoryTransport;
import io.txbox.testkit.TestMariaDb;
import java.nio.charset.StandardCharsets;
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

/** The starter on a {@code jdbc:mariadb:} URL: it builds txbox on MariaDB, and refuses what MariaDB lacks. */
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
        .withConfiguration(AutoConfigurations.of(TxboxAutoConfiguration.class, TxboxMariaDbAutoConfiguration.class))
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
      assertThat(context).hasNotFailed().hasSingleBean(MariaDbOutboxStore.class)
          .doesNotHaveBean(PostgresOutboxStore.class).hasBean("txboxRelay").hasBean("txboxJanitor");
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
  void whatMariaDbLacksIsRefusedAtStartNamingTheSetting() {
    runner.withPropertyValues("txbox.schema=shop").run(context -> assertThat(context).hasFailed()
        .getFailure().rootCause().hasMessageContaining("txbox setting refused, txbox.schema: on MariaDB the tables"
            + " live in the database spring.datasource.url names"));
    runner.withBean("inventory", InboxListener.class,
            () -> InboxListener.consumer("inventory").from("orders").handler((message, key) -> { }))
        .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
            .hasMessageContaining("txbox's inbox runs on PostgreSQL only so far")
            .hasMessageContaining("txbox.inbox.enabled=false"));
  }

  private static void place(JdbcTemplate jdbc, Outbox outbox, String orderId) {
    jdbc.update("INSERT INTO orders (id) VALUES (?)", orderId);
    try {
      outbox.send(Message.builder().type("OrderPlaced").destination("orders").key(orderId)
          .payload(orderId.getBytes(StandardCharsets.UTF_8)).build());
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
