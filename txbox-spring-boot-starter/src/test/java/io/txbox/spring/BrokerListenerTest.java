package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.testkit.TestDatabase;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;

/**
 * What every broker's listener does in a Spring application: the shop's order reaches its
 * {@link InboxListener} once, a redelivered event id is absorbed. Subclasses start the context
 * against one broker of the machine.
 */
@DirtiesContext
abstract class BrokerListenerTest {
  @Autowired ShopApplication.OrderService orders;
  @Autowired JdbcTemplate jdbc;

  /** The schema of this class's context. */
  abstract TestDatabase db();

  /** A fresh schema with the shop's tables. */
  static TestDatabase shopDatabase() {
    TestDatabase db = TestDatabase.create();
    JdbcTemplate jdbc = new JdbcTemplate(db.dataSource());
    jdbc.execute("CREATE TABLE " + db.schema() + ".orders (id text PRIMARY KEY)");
    jdbc.execute("CREATE TABLE " + db.schema() + ".handled (order_id text, message_id uuid, trace_id text)");
    return db;
  }

  @Test
  void anOrderReachesTheListenerAndARepeatedEventIdIsHandledOnce(@Autowired org.springframework.core.env.Environment env)
      throws Exception {
    orders.place("order-1");
    Message twice = Message.builder().id(UUID.randomUUID()).type("OrderPlaced")
        .destination(env.getRequiredProperty("shop.topic")).key("order-twice").payload(new byte[] {1}).build();
    orders.send(twice);
    orders.send(twice);
    orders.place("order-2"); // after both copies, on another key

    await().atMost(Duration.ofSeconds(30)).until(() -> handled("order-1") == 1 && handled("order-2") == 1);
    await().atMost(Duration.ofSeconds(30)).until(() -> count("txbox_inbox") >= 3);
    assertThat(handled("order-twice")).isEqualTo(1);
  }

  private int handled(String orderId) {
    return count("handled WHERE order_id = '" + orderId + "'");
  }

  private int count(String fromWhere) {
    return jdbc.queryForObject("SELECT count(*) FROM " + db().schema() + "." + fromWhere, Integer.class);
  }
}
