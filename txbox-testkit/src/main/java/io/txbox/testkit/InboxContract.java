package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.BatchHandlerException;
import io.txbox.HandlerException;
import io.txbox.Inbox;
import io.txbox.InboxBatchHandler;
import io.txbox.InboxHandler;
import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.ParkedMessage;
import io.txbox.Receipt;
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
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What every {@link InboxStore} must do for {@link Inbox} to keep its promises: each message
 * processed once per consumer, in the transaction of its side effect; dead letters that park their
 * key; retries, retry requests and discards. A store's test extends this class and says how to
 * make a fresh database with txbox's tables; JUnit runs every test below against it.
 *
 * <pre>{@code
 * class MariaDbInboxTest extends InboxContract {
 *   protected DataSource freshDatabase() { ... }
 *   protected InboxStore store() { ... }
 *   protected void dropDatabase() { ... }
 *   ...
 * }
 * }</pre>
 */
public abstract class InboxContract {
  private DataSource dataSource;
  private Inbox inbox;
  private final AtomicInteger handlerRuns = new AtomicInteger();

  /** A new database (or schema) with txbox's tables created; the subclass drops it after each test. */
  protected abstract DataSource freshDatabase() throws Exception;

  /** The store under test, for the tables of {@link #freshDatabase()}. */
  protected abstract InboxStore store();

  /** {@code name} as SQL names the table in the fresh database: with its schema, where there is one. */
  protected abstract String table(String name);

  /** Whether a session is waiting for a row lock in a statement that names {@code table}. */
  protected abstract boolean waitingOnALock(String table) throws SQLException;

  /** Dates every inbox record back by {@code age}, as if it had been received that long ago. */
  protected abstract void ageInboxRecords(Duration age) throws SQLException;

  /** A janitor of the fresh database that deletes inbox records older than {@code inboxRetention}. */
  protected abstract Janitor janitor(Duration inboxRetention);

  /** Drops what {@link #freshDatabase()} made. */
  protected abstract void dropDatabase();

  @BeforeEach
  void createTables() throws Exception {
    dataSource = freshDatabase();
    inbox = Inbox.create(dataSource, store());
    execute("CREATE TABLE " + table("side_effect") + " (consumer VARCHAR(100), message_id VARCHAR(36))");
  }

  @AfterEach
  void drop() {
    dropDatabase();
  }

  /** The inbox under test, on {@link #store()}. */
  protected Inbox inbox() {
    return inbox;
  }

  /** The side effect: a row written on the inbox's connection, in its transaction. */
  private InboxHandler writeSideEffect(String consumer) {
    return (tx, message, key) -> {
      handlerRuns.incrementAndGet();
      try (PreparedStatement p = tx.prepareStatement(
          "INSERT INTO " + table("side_effect") + " (consumer, message_id) VALUES (?, ?)")) {
        p.setString(1, consumer);
        p.setString(2, message.id().toString());
        p.executeUpdate();
      }
    };
  }

  private static Message message() {
    return Message.builder().type("OrderPlaced").destination("orders").key("o-1").payload(new byte[] {1}).build();
  }

  private static Message message(String key, String body) {
    return Message.builder().type("OrderPlaced").destination("orders").key(key)
        .payload(body.getBytes(StandardCharsets.UTF_8)).build();
  }

  private static String body(Message m) {
    return new String(m.payload(), StandardCharsets.UTF_8);
  }

  private int count(String table) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private void execute(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
  @Test
  void aMessageIsProcessedOnceAndItsRedeliveryIsADuplicate() throws SQLException {
    Message m = message();
    assertThat(inbox.receive("inventory", m, writeSideEffect("inventory"))).isEqualTo(Receipt.PROCESSED);
    assertThat(inbox.receive("inventory", m, writeSideEffect("inventory"))).isEqualTo(Receipt.DUPLICATE);
    assertThat(handlerRuns).hasValue(1);
    assertThat(count(table("side_effect"))).isEqualTo(1);
    assertThat(count(table("txbox_inbox"))).isEqualTo(1);
  }

  @Test
  void aHandlerThatThrowsRecordsNothingAndTheRedeliveryIsProcessed() throws SQLException {
    Message m = message();
    InboxHandler crashesAfterItsWrite = (tx, message, key) -> {
      writeSideEffect("inventory").handle(tx, message, key);
      throw new IllegalStateException("crash inside the handler");
    };
    assertThatThrownBy(() -> inbox.receive("inventory", m, crashesAfterItsWrite))
        .isInstanceOf(HandlerException.class)
        .cause().isInstanceOf(IllegalStateException.class).hasMessage("crash inside the handler");
    assertThat(count(table("side_effect"))).isZero();
    assertThat(count(table("txbox_inbox"))).isZero();

    assertThat(inbox.receive("inventory", m, writeSideEffect("inventory"))).isEqualTo(Receipt.PROCESSED);
    assertThat(count(table("side_effect"))).isEqualTo(1);
  }

  @Test
  void aCheckedHandlerFailureIsWrappedAndNamesTheConsumerAndMessage() {
    Message m = message();
    assertThatThrownBy(() -> inbox.receive("billing", m, (tx, message, key) -> {
      throw new java.io.IOException("payment API down");
    }))
        .isInstanceOf(HandlerException.class)
        .hasMessageContaining("consumer billing failed on message " + m.id())
        .hasMessageContaining("payment API down");
  }

  @Test
  void twoConsumersOfOneMessageEachProcessItOnce() throws SQLException {
    Message m = message();
    for (int delivery = 0; delivery < 3; delivery++) {
      inbox.receive("inventory", m, writeSideEffect("inventory"));
      inbox.receive("loyalty", m, writeSideEffect("loyalty"));
    }
    assertThat(handlerRuns).hasValue(2);
    assertThat(count(table("side_effect"))).isEqualTo(2);
  }

  @Test
  void concurrentDeliveriesOfOneMessageRunTheHandlerOnce() throws Exception {
    Message m = message();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Callable<Receipt>> deliveries = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        deliveries.add(() -> inbox.receive("inventory", m, writeSideEffect("inventory")));
      }
      List<Receipt> receipts = new ArrayList<>();
      for (Future<Receipt> f : pool.invokeAll(deliveries)) {
        receipts.add(f.get());
      }
      assertThat(receipts).containsOnlyOnce(Receipt.PROCESSED);
      assertThat(handlerRuns).hasValue(1);
      assertThat(count(table("side_effect"))).isEqualTo(1);
    } finally {
      pool.shutdown();
    }
  }

  @Test
  void theIdempotencyKeyIsStablePerConsumerAndDiffersBetweenConsumers() throws SQLException {
    Message m = message();
    List<String> keys = new ArrayList<>();
    assertThatThrownBy(() -> inbox.receive("inventory", m, (tx, message, key) -> {
      keys.add(key);
      throw new IllegalStateException("first delivery fails");
    })).isInstanceOf(HandlerException.class);
    inbox.receive("inventory", m, (tx, message, key) -> keys.add(key));
    inbox.receive("loyalty", m, (tx, message, key) -> keys.add(key));
    assertThat(keys).hasSize(3);
    assertThat(keys.get(1)).isEqualTo(keys.get(0)).isEqualTo(Inbox.idempotencyKey("inventory", m.id()));
    assertThat(keys.get(2)).isNotEqualTo(keys.get(0));
  }

  @Test
  void aConsumerNameThatCannotBeStoredIsRefusedByName() {
    assertThatThrownBy(() -> inbox.receive("in ventory", message(), writeSideEffect("x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("consumer must be 1 to 100 characters of A-Z a-z 0-9 . _ -, was 'in ventory'");
  }

  @Test
  void aDeadLetteredMessageParksItsKeyAndLaterMessagesWaitBehindItWhileOtherKeysFlow() throws SQLException {
    Message poison = message("k", "k1");
    Message later = message("k", "k2");
    Message other = message("j", "j1");
    assertThat(inbox.deadLetter("billing", poison, new IllegalStateException("no such product"), 3)).isTrue();

    assertThat(inbox.receive("billing", later, writeSideEffect("billing"))).isEqualTo(Receipt.PARKED);
    assertThat(inbox.receive("billing", other, writeSideEffect("billing"))).isEqualTo(Receipt.PROCESSED);
    assertThat(inbox.receive("billing", later, writeSideEffect("billing")))
        .as("a redelivery of a parked message").isEqualTo(Receipt.DUPLICATE);
    assertThat(inbox.deadLetter("billing", poison, new IllegalStateException("again"), 4))
        .as("dead-lettered twice").isFalse();
    assertThat(handlerRuns).as("only the other key's message ran").hasValue(1);

    List<ParkedMessage> parked = inbox.parked("billing", 100);
    assertThat(parked).extracting(p -> body(p.message())).containsExactly("k1", "k2");
    assertThat(parked.get(0).dead()).isTrue();
    assertThat(parked.get(0).attempts()).isEqualTo(3);
    assertThat(parked.get(0).lastError()).isEqualTo("java.lang.IllegalStateException: no such product");
    assertThat(parked.get(1).dead()).isFalse();
    assertThat(parked.get(0).message()).isEqualTo(poison);
  }

  @Test
  void aRetriedKeyIsProcessedInOrderAndFlowsAgain() throws SQLException {
    inbox.deadLetter("billing", message("k", "k1"), new IllegalStateException("bug"), 10);
    inbox.receive("billing", message("k", "k2"), writeSideEffect("billing"));
    inbox.receive("billing", message("k", "k3"), writeSideEffect("billing"));
    List<String> handled = new ArrayList<>();

    int processed = inbox.retry("billing", "k", (tx, m, key) -> handled.add(body(m)));

    assertThat(processed).isEqualTo(3);
    assertThat(handled).containsExactly("k1", "k2", "k3");
    assertThat(inbox.parked("billing", 100)).isEmpty();
    assertThat(inbox.receive("billing", message("k", "k4"), (tx, m, key) -> handled.add(body(m))))
        .isEqualTo(Receipt.PROCESSED);
    assertThat(handled).containsExactly("k1", "k2", "k3", "k4");
  }

  @Test
  void aRetryThatFailsAgainKeepsTheKeyParkedWithTheNewErrorAndWhatWasDoneStaysDone() throws SQLException {
    inbox.deadLetter("billing", message("k", "k1"), new IllegalStateException("bug"), 10);
    inbox.receive("billing", message("k", "k2"), writeSideEffect("billing"));
    inbox.receive("billing", message("k", "k3"), writeSideEffect("billing"));

    assertThatThrownBy(() -> inbox.retry("billing", "k", (tx, m, key) -> {
      if (body(m).equals("k2")) {
        throw new IllegalArgumentException("still broken");
      }
    })).isInstanceOf(HandlerException.class).hasMessageContaining("still broken");

    List<ParkedMessage> parked = inbox.parked("billing", 100);
    assertThat(parked).extracting(p -> body(p.message())).containsExactly("k2", "k3");
    assertThat(parked.get(0).dead()).isTrue();
    assertThat(parked.get(0).attempts()).isEqualTo(1);
    assertThat(parked.get(0).lastError()).isEqualTo("java.lang.IllegalArgumentException: still broken");
    assertThat(inbox.receive("billing", message("k", "k4"), writeSideEffect("billing"))).isEqualTo(Receipt.PARKED);
  }

  @Test
  void anOperatorsRetryRequestIsCarriedOutOnceAndOnlyForAParkedKey() throws SQLException {
    inbox.deadLetter("billing", message("k", "k1"), new IllegalStateException("bug"), 10);
    inbox.receive("billing", message("k", "k2"), writeSideEffect("billing"));
    inbox.deadLetter("billing", message("j", "j1"), new IllegalStateException("bug"), 10);
    List<String> handled = new ArrayList<>();

    assertThat(inbox.runRetryRequests("billing", (tx, m, key) -> handled.add(body(m)))).as("nothing asked").isZero();
    assertThat(inbox.requestRetry("billing", "k", "alice")).isTrue();
    assertThat(inbox.requestRetry("billing", "no-such-key", "alice")).isFalse();
    assertThat(inbox.requestRetry("shipping", "k", "alice")).as("another consumer's key").isFalse();

    assertThat(inbox.runRetryRequests("billing", (tx, m, key) -> handled.add(body(m)))).isEqualTo(1);
    assertThat(handled).containsExactly("k1", "k2");
    assertThat(inbox.parked("billing", 100)).extracting(ParkedMessage::queueKey).as("j was not asked for")
        .containsExactly("j");
    assertThat(inbox.runRetryRequests("billing", (tx, m, key) -> handled.add(body(m)))).as("taken once").isZero();
  }

  @Test
  void aRequestedRetryThatFailsAgainLeavesTheKeyParkedAndTheRequestGone() throws SQLException {
    inbox.deadLetter("billing", message("k", "k1"), new IllegalStateException("bug"), 10);
    inbox.requestRetry("billing", "k", "alice");

    assertThat(inbox.runRetryRequests("billing", (tx, m, key) -> {
      throw new IllegalStateException("still broken");
    })).isZero();

    assertThat(inbox.parked("billing", 100)).singleElement()
        .satisfies(p -> assertThat(p.lastError()).contains("still broken"));
    assertThat(inbox.runRetryRequests("billing", (tx, m, key) -> { })).as("the request was used up").isZero();
    assertThat(inbox.parked("billing", 100)).hasSize(1);
  }

  @Test
  void aDiscardedKeyFlowsAgainAndItsMessagesStayDuplicates() throws SQLException {
    Message poison = message("k", "k1");
    Message behind = message("k", "k2");
    inbox.deadLetter("billing", poison, new IllegalStateException("bug"), 10);
    inbox.receive("billing", behind, writeSideEffect("billing"));

    assertThat(inbox.discard("billing", "k")).isEqualTo(2);

    assertThat(inbox.parked("billing", 100)).isEmpty();
    assertThat(inbox.receive("billing", poison, writeSideEffect("billing"))).isEqualTo(Receipt.DUPLICATE);
    assertThat(inbox.receive("billing", behind, writeSideEffect("billing"))).isEqualTo(Receipt.DUPLICATE);
    assertThat(inbox.receive("billing", message("k", "k3"), writeSideEffect("billing"))).isEqualTo(Receipt.PROCESSED);
  }

  @Test
  void aMessageWithoutAKeyIsDeadLetteredAloneUnderAKeyOfItsOwn() throws SQLException {
    Message unkeyed = Message.builder().type("Ping").destination("orders").payload(new byte[] {1}).build();
    inbox.deadLetter("billing", unkeyed, new IllegalStateException("bug"), 1);
    assertThat(inbox.receive("billing", Message.builder().type("Ping").destination("orders").payload(new byte[] {2})
        .build(), writeSideEffect("billing"))).isEqualTo(Receipt.PROCESSED);

    String queueKey = inbox.parked("billing", 10).get(0).queueKey();
    assertThat(queueKey).isEqualTo("txbox-unkeyed:" + unkeyed.id());
    assertThat(inbox.retry("billing", queueKey, writeSideEffect("billing"))).isEqualTo(1);
  }

  @Test
  void aMessageArrivingWhileItsKeyIsRetriedIsProcessedAfterTheParkedOnes() throws Exception {
    inbox.deadLetter("billing", message("k", "k1"), new IllegalStateException("bug"), 10);
    inbox.receive("billing", message("k", "k2"), writeSideEffect("billing"));
    List<String> handled = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch inFirst = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    InboxHandler record = (tx, m, key) -> handled.add(body(m));
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<Integer> retry = pool.submit(() -> inbox.retry("billing", "k", (tx, m, key) -> {
        if (body(m).equals("k1")) {
          inFirst.countDown();
          release.await();
        }
        handled.add(body(m));
      }));
      inFirst.await();
      Future<Receipt> arriving = pool.submit(() -> inbox.receive("billing", message("k", "k3"), record));
      await().atMost(Duration.ofSeconds(30))
          .until(() -> waitingOnALock(table("txbox_inbox_parked_key")));
      release.countDown();

      // Either it is parked behind k2 and the retry handles it, or the retry's next transaction
      // locks the key again before it gets its turn, and it waits until the key is free: the
      // database does not promise which. Both keep it after the parked ones.
      Receipt receipt = arriving.get();
      assertThat(receipt).isIn(Receipt.PARKED, Receipt.PROCESSED);
      assertThat(retry.get()).as("handled by the retry, with arriving " + receipt)
          .isEqualTo(receipt == Receipt.PARKED ? 3 : 2);
      assertThat(handled).containsExactly("k1", "k2", "k3");
      assertThat(inbox.receive("billing", message("k", "k4"), record)).isEqualTo(Receipt.PROCESSED);
    } finally {
      pool.shutdownNow();
    }
  }


  @Test
  void theJanitorKeepsTheRecordsOfParkedMessagesPastTheRetention() throws SQLException {
    Message poison = message("k", "k1");
    inbox.deadLetter("billing", poison, new IllegalStateException("bug"), 10);
    inbox.receive("billing", message("k", "k2"), writeSideEffect("billing"));
    ageInboxRecords(Duration.ofDays(30));
    janitor(Duration.ofDays(1)).runOnce();

    assertThat(count(table("txbox_inbox"))).isEqualTo(2);
    assertThat(inbox.receive("billing", poison, writeSideEffect("billing"))).isEqualTo(Receipt.DUPLICATE);
  }
  private static Message keyed(String key) {
    return Message.builder().type("OrderPlaced").destination("orders").key(key).payload(new byte[] {1}).build();
  }

  @Test
  void aBatchIsHandledInOneTransactionAndItsDuplicatesAreRecognisedWithinAndAcrossBatches() throws SQLException {
    Message a = keyed("a");
    Message b = keyed("b");
    Message c = keyed("a");
    assertThat(inbox.receiveAll("inventory", List.of(a, b, c, b), writeSideEffect("inventory")))
        .containsExactly(Receipt.PROCESSED, Receipt.PROCESSED, Receipt.PROCESSED, Receipt.DUPLICATE);
    Message d = keyed("d");
    assertThat(inbox.receiveAll("inventory", List.of(a, d), writeSideEffect("inventory")))
        .containsExactly(Receipt.DUPLICATE, Receipt.PROCESSED);
    assertThat(inbox.receive("inventory", c, writeSideEffect("inventory"))).isEqualTo(Receipt.DUPLICATE);
    assertThat(inbox.receiveAll("billing", List.of(a), writeSideEffect("billing")))
        .as("another consumer processes it once too").containsExactly(Receipt.PROCESSED);
    assertThat(handlerRuns).hasValue(5);
    assertThat(count(table("side_effect"))).isEqualTo(5);
  }

  @Test
  void aHandlerFailingInABatchRollsTheWholeBatchBack() throws SQLException {
    Message first = keyed("a");
    Message failing = keyed("b");
    InboxHandler failsOnSecond = (tx, m, key) -> {
      writeSideEffect("inventory").handle(tx, m, key);
      if (m.id().equals(failing.id())) {
        throw new IllegalStateException("no stock row");
      }
    };
    assertThatThrownBy(() -> inbox.receiveAll("inventory", List.of(first, failing, keyed("c")), failsOnSecond))
        .isInstanceOf(HandlerException.class)
        .satisfies(e -> assertThat(((HandlerException) e).messageId()).isEqualTo(failing.id()))
        .hasRootCauseMessage("no stock row");
    assertThat(count(table("side_effect"))).as("the first message's side effect rolled back too").isZero();
    assertThat(count(table("txbox_inbox"))).isZero();
    assertThat(inbox.receive("inventory", first, writeSideEffect("inventory"))).isEqualTo(Receipt.PROCESSED);
  }

  @Test
  void aBatchMessageOfAParkedKeyIsStoredBehindItsDeadMessageWhileOtherKeysAreHandled() throws SQLException {
    Message dead = keyed("a");
    assertThat(inbox.deadLetter("inventory", dead, new IllegalStateException("poison"), 3)).isTrue();
    Message behind = keyed("a");
    Message other = keyed("b");
    assertThat(inbox.receiveAll("inventory", List.of(behind, other, behind), writeSideEffect("inventory")))
        .containsExactly(Receipt.PARKED, Receipt.PROCESSED, Receipt.DUPLICATE);
    assertThat(inbox.parked("inventory", 10)).extracting(p -> p.message().id())
        .containsExactly(dead.id(), behind.id());
    assertThat(handlerRuns).hasValue(1);
  }

  @Test
  void aBatchHandlerGetsTheBatchsNewMessagesAtOnceAndItsFailureNamesNoMessage() throws SQLException {
    Message a = keyed("a");
    Message b = keyed("b");
    inbox.receive("inventory", a, writeSideEffect("inventory"));
    List<List<Message>> calls = new ArrayList<>();
    InboxBatchHandler record = (tx, messages) -> {
      calls.add(messages);
      for (Message m : messages) {
        writeSideEffect("inventory").handle(tx, m, Inbox.idempotencyKey("inventory", m.id()));
      }
    };
    Message c = keyed("c");
    assertThat(inbox.receiveAll("inventory", List.of(a, b, c), record))
        .containsExactly(Receipt.DUPLICATE, Receipt.PROCESSED, Receipt.PROCESSED);
    assertThat(calls).containsExactly(List.of(b, c));

    InboxBatchHandler refuses = (tx, messages) -> {
      record.handle(tx, messages);
      throw new IllegalStateException("one of them is wrong");
    };
    assertThatThrownBy(() -> inbox.receiveAll("inventory", List.of(keyed("d"), keyed("e")), refuses))
        .isInstanceOf(BatchHandlerException.class).hasMessageContaining("a batch of 2 messages")
        .hasRootCauseMessage("one of them is wrong");
    assertThat(count(table("side_effect"))).as("a, b and c; d and e rolled back").isEqualTo(3);
  }

}
