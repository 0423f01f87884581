package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.JdkNeutral;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.PgBouncer;
import io.txbox.testkit.TestDatabase;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The starter in an application whose DataSource goes through PgBouncer in transaction mode (the
 * URL pgjdbc advises there, {@code prepareThreshold=0}), with the relay's {@code LISTEN} on a
 * direct connection ({@code txbox.relay.listen-jdbc-url}): writes, relay, inbox listener and
 * janitor all pooled per transaction. The idle interval is long, so an order arrives quickly only
 * when its commit wakes the relay.
 */
@JdkNeutral
@SpringBootTest(classes = ShopApplication.class, properties = {
    "txbox.broker=kafka",
    "txbox.relay.idle-interval=1m"})
@Import(StarterBehindPgBouncerTest.TestBeans.class)
@DirtiesContext
class StarterBehindPgBouncerTest {
  private static final String TOPIC = "shop-pooled-" + UUID.randomUUID();
  private static PgBouncer pooler;
  private static TestDatabase db;

  @Autowired ShopApplication.OrderService orders;
  @Autowired JdbcTemplate jdbc;

  @BeforeAll
  static void createPoolerTopicAndTables() {
    KafkaBroker.shared().createTopic(TOPIC, 3);
    pooler = TestDatabase.pooler(PgBouncer.Mode.TRANSACTION, 8);
    db = TestDatabase.create(TestDatabase.throughPooler(pooler));
    JdbcTemplate jdbc = new JdbcTemplate(db.dataSource());
    jdbc.execute("CREATE TABLE " + db.schema() + ".orders (id text PRIMARY KEY)");
    jdbc.execute("CREATE TABLE " + db.schema() + ".handled (order_id text, message_id uuid, trace_id text)");
  }

  /** Drops the schema and stops the pooler when the context closes, after the relay and listeners stopped. */
  @TestConfiguration
  static class TestBeans {
    @Bean(destroyMethod = "close")
    AutoCloseable poolerAndDatabase() {
      return () -> {
        db.close();
        pooler.close();
      };
    }
  }

  @DynamicPropertySource
  static void connections(DynamicPropertyRegistry properties) {
    ShopProperties.register(properties, () -> db, TOPIC);
    properties.add("spring.datasource.url", () -> TestDatabase.throughPooler(pooler));
    properties.add("txbox.relay.listen-jdbc-url", TestDatabase::jdbcUrl);
    properties.add("txbox.kafka.bootstrap-servers", () -> KafkaBroker.shared().bootstrapServers());
  }

  @Test
  void ordersAreRelayedAndHandledOnceEachWokenByTheirCommits() throws Exception {
    Thread.sleep(5000); // the relay's polls are seconds apart by now: only a commit's NOTIFY wakes it soon
    for (int i = 0; i < 20; i++) {
      orders.place("order-" + i);
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> count("handled") == 20);
    assertThat(count("orders")).isEqualTo(20);
    assertThat(jdbc.queryForObject("SELECT count(DISTINCT order_id) FROM " + db.schema() + ".handled", Integer.class))
        .as("each once").isEqualTo(20);
  }

  private int count(String table) {
    return jdbc.queryForObject("SELECT count(*) FROM " + db.schema() + "." + table, Integer.class);
  }
}
