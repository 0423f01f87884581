package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.InboxQueue;
import io.txbox.InboxQueue.Enqueued;
import io.txbox.Message;
import io.txbox.RetryPolicy;
import io.txbox.spi.InboxQueueStore;
import io.txbox.spi.InboxStore;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What every {@link InboxQueueStore} must do for {@link InboxQueue} to keep its promises: order
 * per key under several workers, sequence gaps held for the gap timeout, retries, dead letters
 * that park their key, discards and an operator's retry requests. A store's test extends this
 * class and says how to make a fresh database with txbox's tables.
 *
 * <pre>{@code
 * class MariaDbInboxQueueTest extends InboxQueueContract<MariaDbInboxStore> {
 *   protected DataSource freshDatabase() { ... }
 *   protected MariaDbInboxStore store() { ... }
 *   protected String table(String name) { return name; }
 *   protected void dropDatabase() { ... }
 * }
 * }</pre>
 *
 * @param <S> the store: an inbox store too, for the operator's side of dead letters
 */
public abstract class InboxQueueContract<S extends InboxStore & InboxQueueStore> {
  private DataSource dataSource;
  private S store;
  private final AtomicInteger handlerRuns = new AtomicInteger();
  /** The order the handlers ran in: only one worker at a time has a key, so per key this is its order. */
  private final AtomicLong handled = new AtomicLong();
  private final List<InboxQueue> queues = new ArrayList<>();

  /** A new database (or schema) with txbox's tables created; the subclass drops it after each test. */
  protected abstract DataSource freshDatabase() throws Exception;

  /** The store under test, for the tables of {@link #freshDatabase()}. */
  protected abstract S store();

  /** {@code name} as SQL names the table in the fresh database: with its schema, where there is one. */
  protected abstract String table(String name);

  /** Drops what {@link #freshDatabase()} made; called once the test's queues are closed. */
  protected abstract void dropDatabase();

  @BeforeEach
  void createTables() throws Exception {
    dataSource = freshDatabase();
    store = store();
    execute("CREATE TABLE " + table("applied")
        + " (handled BIGINT, msg_key VARCHAR(255), sequence BIGINT, applied_at_ms BIGINT)");
  }

  @AfterEach
  void closeQueuesThenDropDatabase() {
    queues.forEach(InboxQueue::close);
    dropDatabase();
  }

  /** The side effect: a row per processed message, in the worker's transaction. */
  private InboxHandler apply() {
    return (tx, message, key) -> {
      handlerRuns.incrementAndGet();
      try (PreparedStatement p = tx.prepareStatement("INSERT INTO " + table("applied")
          + " (handled, msg_key, sequence, applied_at_ms) VALUES (?, ?, ?, ?)")) {
        p.setLong(1, handled.incrementAndGet());
        p.setString(2, message.key());
        p.setLong(3, Long.parseLong(message.headers().get(InboxQueue.SEQUENCE_HEADER)));
        p.setLong(4, System.currentTimeMillis());
        p.executeUpdate();
      }
    };
  }

  private InboxQueue queue(InboxHandler handler) {
    return started(InboxQueue.builder(dataSource, store, "billing", handler).workers(4));
  }

  private InboxQueue started(InboxQueue.Builder builder) {
    return started(builder.build());
  }

  private InboxQueue started(InboxQueue queue) {
    queues.add(queue);
    return queue.start();
  }

  private static Message event(String key, long sequence) {
    return Message.builder().type("Invoiced").destination("invoices").key(key)
        .header(InboxQueue.SEQUENCE_HEADER, Long.toString(sequence))
        .payload(("{\"n\":" + sequence + "}").getBytes(StandardCharsets.UTF_8), "application/json")
        .build();
  }

  @Test
  void keepsOrderPerKeyUnderFourWorkersWithShuffledDuplicatedInput() throws Exception {
    List<Message> input = new ArrayList<>();
    for (int k = 0; k < 20; k++) {
      for (int n = 1; n <= 30; n++) {
        Message m = event("key-" + k, n);
        input.add(m);
        input.add(m); // the broker delivers it twice
      }
    }
    Collections.shuffle(input, new Random(42));
    InboxQueue queue = queue(apply());

    ExecutorService senders = Executors.newFixedThreadPool(3);
    List<Future<Enqueued>> results = new ArrayList<>();
    for (Message m : input) {
      results.add(senders.submit(() -> queue.enqueue(m)));
    }
    int duplicates = 0;
    for (Future<Enqueued> r : results) {
      duplicates += r.get() == Enqueued.DUPLICATE ? 1 : 0;
    }
    senders.shutdown();

    await().atMost(Duration.ofSeconds(60)).until(() -> queue.processed() == 600);
    assertThat(duplicates).isEqualTo(600);
    assertThat(handlerRuns).hasValue(600);
    Map<String, List<Long>> applied = appliedByKey();
    assertThat(applied).hasSize(20);
    List<Long> oneToThirty = new ArrayList<>();
    for (long n = 1; n <= 30; n++) {
      oneToThirty.add(n);
    }
    applied.values().forEach(sequence -> assertThat(sequence).isEqualTo(oneToThirty));
    assertThat(count("SELECT count(*) FROM " + table("txbox_inbox_queue") + "")).isZero();
    assertThat(count("SELECT count(*) FROM " + table("txbox_inbox") + " WHERE status = 'processed'")).isEqualTo(600);
  }

  @Test
  void aGapIsHeldForTheGapTimeoutThenProcessedAndTheLateMessageStillCounts() throws Exception {
    InboxQueue queue = started(InboxQueue.builder(dataSource, store, "billing", apply())
        .gapTimeout(Duration.ofSeconds(1)));
    queue.enqueue(event("k", 1));
    queue.enqueue(event("k", 3));
    await().atMost(Duration.ofSeconds(10)).until(() -> queue.processed() == 1);
    await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(1)).untilAsserted(() ->
        assertThat(appliedByKey().get("k")).as("3 waits for 2").containsExactly(1L));

    await().atMost(Duration.ofSeconds(10)).until(() -> queue.processed() == 2);
    assertThat(appliedByKey().get("k")).containsExactly(1L, 3L);
    List<Long> at = appliedAtMillis();
    assertThat(at.get(1) - at.get(0)).as("milliseconds 3 waited after 1").isGreaterThanOrEqualTo(900);

    queue.enqueue(event("k", 2));
    await().atMost(Duration.ofSeconds(10)).until(() -> queue.processed() == 3);
    assertThat(appliedByKey().get("k")).containsExactly(1L, 3L, 2L);
  }

  @Test
  void aGapFilledInTimeKeepsTheOrder() throws Exception {
    InboxQueue queue = started(InboxQueue.builder(dataSource, store, "billing", apply())
        .gapTimeout(Duration.ofMinutes(1)));
    queue.enqueue(event("k", 3));
    queue.enqueue(event("k", 2));
    await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(1)).untilAsserted(() ->
        assertThat(queue.processed()).as("nothing before 1").isZero());
    queue.enqueue(event("k", 1));
    await().atMost(Duration.ofSeconds(10)).until(() -> queue.processed() == 3);
    assertThat(appliedByKey().get("k")).containsExactly(1L, 2L, 3L);
  }

  @Test
  void aFailingMessageIsRetriedThenDeadAndParksItsKeyWhileOtherKeysFlow() throws Exception {
    AtomicBoolean broken = new AtomicBoolean(true);
    InboxHandler failOnTwo = (tx, message, key) -> {
      apply().handle(tx, message, key);
      if (broken.get() && message.headers().get(InboxQueue.SEQUENCE_HEADER).equals("2")) {
        throw new IllegalStateException("no invoice for this order");
      }
    };
    InboxQueue queue = started(InboxQueue.builder(dataSource, store, "billing", failOnTwo)
        .retryPolicy(RetryPolicy.builder().initialDelay(Duration.ofMillis(10)).maxAttempts(3).build()));
    Message two = event("k", 2);
    queue.enqueue(event("k", 1));
    queue.enqueue(two);
    queue.enqueue(event("k", 3));
    queue.enqueue(event("j", 1));

    await().atMost(Duration.ofSeconds(10)).until(() -> queue.processed() == 2 && queue.deadLettered() == 1);
    assertThat(handlerRuns).as("k:1, three attempts at k:2, j:1").hasValue(5);
    assertThat(appliedByKey().get("k")).as("the failed attempts left nothing").containsExactly(1L);
    assertThat(appliedByKey().get("j")).containsExactly(1L);
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT q.status, q.attempts, q.last_error, i.status, q.message_id FROM "
            + table("txbox_inbox_queue") + " q JOIN " + table("txbox_inbox") + " i USING (consumer, message_id)"
            + " WHERE q.status = 'dead'")) {
      assertThat(rs.next()).as("the dead message").isTrue();
      assertThat(rs.getString(5)).isEqualTo(two.id().toString());
      assertThat(rs.getString(1)).isEqualTo("dead");
      assertThat(rs.getInt(2)).isEqualTo(3);
      assertThat(rs.getString(3)).contains("no invoice for this order");
      assertThat(rs.getString(4)).isEqualTo("dead");
    }
    assertThat(queue.enqueue(two)).as("a dead message is not queued again").isEqualTo(Enqueued.DUPLICATE);
    assertThat(queue.enqueue(event("k", 4))).as("behind the dead one").isEqualTo(Enqueued.PARKED);
    assertThat(queue.parked(100)).extracting(p -> p.message().headers().get(InboxQueue.SEQUENCE_HEADER))
        .containsExactly("2", "3", "4");

    broken.set(false);
    assertThat(queue.retry("k")).isEqualTo(3);
    await().atMost(Duration.ofSeconds(10)).until(() -> queue.processed() == 5);
    assertThat(appliedByKey().get("k")).containsExactly(1L, 2L, 3L, 4L);
    assertThat(queue.parked(100)).isEmpty();
    assertThat(queue.enqueue(event("k", 5))).isEqualTo(Enqueued.QUEUED);
  }

  @Test
  void aDiscardedKeyMovesPastItsParkedMessagesAndTakesNewOnes() throws Exception {
    InboxHandler failOnOne = (tx, message, key) -> {
      if (message.headers().get(InboxQueue.SEQUENCE_HEADER).equals("1")) {
        throw new IllegalArgumentException("permanent");
      }
      apply().handle(tx, message, key);
    };
    InboxQueue queue = started(InboxQueue.builder(dataSource, store, "billing", failOnOne)
        .retryPolicy(RetryPolicy.builder().permanentWhen(e -> e instanceof IllegalArgumentException).build()));
    Message one = event("k", 1);
    queue.enqueue(one);
    await().atMost(Duration.ofSeconds(10)).until(() -> queue.deadLettered() == 1);
    queue.enqueue(event("k", 2));

    assertThat(queue.discard("k")).isEqualTo(2);
    queue.enqueue(event("k", 3));

    await().atMost(Duration.ofSeconds(10)).until(() -> queue.processed() == 1);
    assertThat(appliedByKey().get("k")).as("3 follows the discarded 2 without a gap wait").containsExactly(3L);
    assertThat(queue.enqueue(one)).isEqualTo(Enqueued.DUPLICATE);
  }

  @Test
  void aRunningQueueCarriesOutAnOperatorsRetryRequest() throws Exception {
    AtomicBoolean broken = new AtomicBoolean(true);
    InboxHandler failOnOne = (tx, message, key) -> {
      if (broken.get() && message.headers().get(InboxQueue.SEQUENCE_HEADER).equals("1")) {
        throw new IllegalStateException("no invoice for this order");
      }
      apply().handle(tx, message, key);
    };
    InboxQueue queue = InboxQueue.builder(dataSource, store, "billing", failOnOne)
        .retryPolicy(RetryPolicy.builder().initialDelay(Duration.ofMillis(10)).maxAttempts(1).build()).build();
    queue.enqueue(event("k", 1));
    queue.enqueue(event("k", 2)); // both queued before a worker runs, so the second is parked behind the first
    started(queue);
    await().atMost(Duration.ofSeconds(10)).until(() -> queue.parked(100).size() == 2);

    broken.set(false);
    Inbox operator = Inbox.create(dataSource, store);
    assertThat(operator.requestRetry("billing", "k", "alice")).isTrue();

    await().atMost(Duration.ofSeconds(10)).until(() -> queue.processed() == 2);
    assertThat(appliedByKey().get("k")).containsExactly(1L, 2L);
    assertThat(queue.parked(100)).isEmpty();
  }

  @Test
  void aMessageQueuedWhileItsKeyWasBeingParkedWaitsForTheRetryPastTheGapTimeout() throws Exception {
    AtomicBoolean broken = new AtomicBoolean(true);
    InboxHandler failOnOne = (tx, message, key) -> {
      if (broken.get() && message.headers().get(InboxQueue.SEQUENCE_HEADER).equals("1")) {
        throw new IllegalArgumentException("no invoice for this order");
      }
      apply().handle(tx, message, key);
    };
    InboxQueue queue = started(InboxQueue.builder(dataSource, store, "billing", failOnOne)
        .retryPolicy(RetryPolicy.builder().maxAttempts(1).build()).gapTimeout(Duration.ofMillis(100)));
    queue.enqueue(event("k", 1));
    await().atMost(Duration.ofSeconds(10)).until(() -> queue.parked(100).size() == 1);
    assertThat(queue.enqueue(event("k", 2))).isEqualTo(Enqueued.PARKED);
    // What an enqueue that committed while the key was being parked leaves: queued, since the
    // parking could not see it yet.
    execute("UPDATE " + table("txbox_inbox_queue") + " SET status = 'queued' WHERE status = 'parked'");

    await().during(Duration.ofMillis(800)).atMost(Duration.ofSeconds(5))
        .until(() -> !appliedByKey().containsKey("k"));
    broken.set(false);
    queue.retry("k");
    await().atMost(Duration.ofSeconds(10)).until(() -> appliedByKey().getOrDefault("k", List.of()).size() == 2);
    assertThat(appliedByKey().get("k")).containsExactly(1L, 2L);
  }

  @Test
  void aKeyWaitingForItsRetryDoesNotHoldUpKeysThatAreReady() throws Exception {
    // without sequence numbers: order is the order received, and nothing but the retry holds k back
    InboxHandler failOnK1 = (tx, message, key) -> {
      String n = new String(message.payload(), StandardCharsets.UTF_8);
      if (n.equals("k1")) {
        throw new IllegalStateException("not yet");
      }
      handlerRuns.incrementAndGet();
    };
    InboxQueue queue = started(InboxQueue.builder(dataSource, store, "billing", failOnK1).workers(1)
        .retryPolicy(RetryPolicy.builder().initialDelay(Duration.ofMinutes(1)).maxDelay(Duration.ofMinutes(1))
            .maxAttempts(1000).build()));
    queue.enqueue(unsequenced("k", "k1"));
    queue.enqueue(unsequenced("k", "k2"));
    await().atMost(Duration.ofSeconds(10))
        .until(() -> count("SELECT count(*) FROM " + table("txbox_inbox_queue") + " WHERE attempts > 0") == 1);
    queue.enqueue(unsequenced("j", "j1"));

    await().atMost(Duration.ofSeconds(10)).until(() -> queue.processed() == 1);
    assertThat(handlerRuns).as("j1 only: k2 waits behind k1").hasValue(1);
  }

  private static Message unsequenced(String key, String body) {
    return Message.builder().type("Invoiced").destination("invoices").key(key)
        .payload(body.getBytes(StandardCharsets.UTF_8)).build();
  }

  @Test
  void aRedeliveryOfADeadMessageWhoseRecordIsGoneLeavesNothingBehindThatNobodyProcesses() throws Exception {
    InboxQueue queue = started(InboxQueue.builder(dataSource, store, "billing", (tx, message, key) -> {
      throw new IllegalArgumentException("permanent");
    }).retryPolicy(RetryPolicy.builder().permanentWhen(e -> e instanceof IllegalArgumentException).build()));
    Message dead = event("k", 1);
    queue.enqueue(dead);
    await().atMost(Duration.ofSeconds(10)).until(() -> queue.deadLettered() == 1);
    execute("DELETE FROM " + table("txbox_inbox") + ""); // as a janitor of an earlier version did

    assertThat(queue.enqueue(dead)).isEqualTo(Enqueued.DUPLICATE);
    assertThat(count("SELECT count(*) FROM " + table("txbox_inbox") + "")).isZero();
    assertThat(queue.parked(10)).extracting(p -> p.message().id()).containsExactly(dead.id());
  }

  @Test
  void aBadSequenceHeaderIsRefusedByName() {
    InboxQueue queue = queue(apply());
    Message bad = Message.builder().type("Invoiced").destination("invoices").key("k")
        .header(InboxQueue.SEQUENCE_HEADER, "first").payload(new byte[0], "application/json").build();
    assertThatThrownBy(() -> queue.enqueue(bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("txbox-sequence")
        .hasMessageContaining("'first'");
  }

  private Map<String, List<Long>> appliedByKey() throws SQLException {
    Map<String, List<Long>> byKey = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT msg_key, sequence FROM " + table("applied") + " ORDER BY handled")) {
      while (rs.next()) {
        byKey.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getLong(2));
      }
    }
    return byKey;
  }

  /** When each side effect was written, in the order the handlers ran. */
  private List<Long> appliedAtMillis() throws SQLException {
    List<Long> at = new ArrayList<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT applied_at_ms FROM " + table("applied") + " ORDER BY handled")) {
      while (rs.next()) {
        at.add(rs.getLong(1));
      }
    }
    return at;
  }

  private long count(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private void execute(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
