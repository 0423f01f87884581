package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.Message;
import io.txbox.ParkedMessage;
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import io.txbox.spi.InboxStore;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.Subscriber;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every transport's {@link Publisher} and {@link Subscriber} must do, proven against the real
 * broker: a transport's test extends this class and says how to reach its broker, and JUnit runs
 * every test below against it. The same suite for every broker is what makes them interchangeable
 * for a user.
 *
 * <pre>{@code
 * class NatsContractTest extends TransportContract {
 *   protected String sharedBroker() { return NatsServer.MACHINE_URL; }
 *   protected StoppableBroker startOwnBroker() { return NatsServer.start(); }
 *   ...
 * }
 * }</pre>
 *
 * <p>Tests that stop a broker stop one they started themselves ({@link #startOwnBroker()}); the
 * others share {@link #sharedBroker()}. The subclass must have a constructor without parameters:
 * one test runs the subscriber in a child JVM built from it, and kills it.
 */
public abstract class TransportContract {
  /** Exit status of the child JVM that halts itself right after an inbox commit. */
  static final int HALTED_AFTER_COMMIT = 99;
  static final Duration WAIT = Duration.ofSeconds(90);
  private static final RetryPolicy FAST_RETRIES = fastRetries().build();

  private TestDatabase db;
  private Inbox inbox;
  private final List<AutoCloseable> toClose = new ArrayList<>();

  /** Where the broker every test may share is, in the form {@link #publisher} takes. */
  protected abstract String sharedBroker();

  /** Starts a broker of this test's own, which a test may kill and start again. */
  protected abstract StoppableBroker startOwnBroker();

  /**
   * Creates what messages to destination {@code name} need on {@code broker} (a topic; a stream
   * and subject) and returns the destination to put in messages.
   */
  protected abstract String createDestination(String broker, String name) throws Exception;

  /** A publisher for {@code broker}, with timeouts short enough for tests (a few seconds). */
  protected abstract Publisher publisher(String broker);

  /**
   * An unstarted subscriber that feeds {@code destination} into {@code inbox} as {@code consumer},
   * retrying with {@code retryPolicy} and then doing what {@code whenExhausted} says, with a
   * redelivery delay after a crash of a few seconds.
   */
  protected abstract Subscriber subscriber(String broker, String destination, Inbox inbox, String consumer,
      InboxHandler handler, RetryPolicy retryPolicy, WhenExhausted whenExhausted);

  /** A subscriber as above that retries within a few hundred milliseconds, ten times, then dead-letters. */
  protected final Subscriber subscriber(String broker, String destination, Inbox inbox, String consumer,
      InboxHandler handler) {
    return subscriber(broker, destination, inbox, consumer, handler, FAST_RETRIES, WhenExhausted.DEAD_LETTER);
  }

  /**
   * The largest payload, in bytes, the transport sends with its default settings: the broker's
   * limit, or the publisher's own where it checks one first.
   */
  protected abstract int payloadLimit();

  /**
   * Called after the outage test restarted the broker of its own: what an operator's deployment
   * does when a node comes back, before the relay's batch is sent again. Default nothing.
   */
  protected void brokerRestarted(String broker, String destination) throws Exception {}

  /** Creates txbox's tables in {@code db}'s schema. */
  protected abstract void migrate(TestDatabase db);

  /** The inbox store for tables in {@code schema}. */
  protected abstract InboxStore inboxStore(String schema);

  /**
   * Whether the subscriber takes several messages in one database transaction; true unless the
   * transport hands them over one at a time.
   */
  protected boolean takesBatches() {
    return true;
  }

  @BeforeEach
  void createSchema() throws SQLException {
    db = TestDatabase.create();
    migrate(db);
    inbox = Inbox.create(db.dataSource(), inboxStore(db.schema()));
    execute(db.dataSource(), "CREATE TABLE " + db.schema() + ".side_effect"
        + " (seq bigserial, consumer text, message_id uuid, key text, body text)");
  }

  @AfterEach
  void closeEverything() throws Exception {
    Collections.reverse(toClose);
    for (AutoCloseable c : toClose) {
      c.close();
    }
    db.close();
  }

  @Test
  void everyMessageOfABatchIsAcknowledgedAndHandledOnce() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    List<Message> sent = keyedMessages(destination, 6, 50);
    publishAll(closing(publisher(sharedBroker())), sent, 100);

    String consumer = uniqueName();
    start(subscriber(sharedBroker(), destination, inbox, consumer, recordSideEffect(consumer)));

    awaitHandled(consumer, sent.size());
    assertThat(handledIds(consumer)).as("each message handled once").hasSize(sent.size())
        .containsExactlyInAnyOrderElementsOf(sent.stream().map(Message::id).toList());
  }

  @Test
  void eachKeysMessagesAreHandledInTheOrderTheyWerePublished() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    List<Message> sent = keyedMessages(destination, 8, 60);
    publishAll(closing(publisher(sharedBroker())), sent, 40);

    String consumer = uniqueName();
    start(subscriber(sharedBroker(), destination, inbox, consumer, recordSideEffect(consumer)));

    awaitHandled(consumer, sent.size());
    assertThat(bodiesByKey(consumer)).isEqualTo(bodiesByKey(sent));
  }

  @Test
  void idTypeVersionKeyPayloadAndHeadersArriveAsSent() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    byte[] everyByte = new byte[256];
    for (int i = 0; i < everyByte.length; i++) {
      everyByte[i] = (byte) i;
    }
    Message full = Message.builder().type("OrderPlaced").version(3).destination(destination)
        .key("ключ-1 ✓").payload(everyByte, "application/json; charset=utf-8")
        .header("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        .header("tracestate", "vendor=a,other=b")
        .header("baggage", "user=alice,tier=gold")
        .header("x-tenant", "acme")
        .header("x-note", "naïve ✓ 日本, =?utf-8?b?bm90IGVuY29kZWQ=?=")
        .build();
    Message bare = Message.builder().type("Ping").destination(destination).payload(new byte[0]).build();
    publishAll(closing(publisher(sharedBroker())), List.of(full, bare), 10);

    Map<UUID, Message> received = new ConcurrentHashMap<>();
    start(subscriber(sharedBroker(), destination, inbox, uniqueName(), (tx, m, key) -> received.put(m.id(), m)));

    await().atMost(WAIT).until(() -> received.size() == 2);
    for (Message sentMessage : List.of(full, bare)) {
      Message got = received.get(sentMessage.id());
      assertThat(got).as("message %s", sentMessage.id()).isNotNull();
      assertThat(got.type()).isEqualTo(sentMessage.type());
      assertThat(got.version()).isEqualTo(sentMessage.version());
      assertThat(got.key()).isEqualTo(sentMessage.key());
      assertThat(got.payload()).isEqualTo(sentMessage.payload());
      assertThat(got.contentType()).isEqualTo(sentMessage.contentType());
      assertThat(got.headers()).isEqualTo(sentMessage.headers());
    }
  }

  @Test
  void aMessageNearTheBrokersLimitIsDeliveredAndOneOverItFailsForGood() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    Message near = Message.builder().type("Big").destination(destination).key("big")
        .payload(randomBytes(payloadLimit() - 16 * 1024)).build();
    Message over = Message.builder().type("Big").destination(destination).key("big")
        .payload(randomBytes(payloadLimit() + 1)).build();

    PublishResult result = closing(publisher(sharedBroker())).publish(List.of(near, over));

    assertThat(result.failed(0)).as("near the limit: %s", result.failure(0)).isFalse();
    assertThat(result.failure(1)).as("over the limit").isInstanceOf(PermanentPublishException.class);
    Map<UUID, Message> received = new ConcurrentHashMap<>();
    start(subscriber(sharedBroker(), destination, inbox, uniqueName(), (tx, m, key) -> received.put(m.id(), m)));
    await().atMost(WAIT).until(() -> received.containsKey(near.id()));
    assertThat(received.get(near.id()).payload()).isEqualTo(near.payload());
  }

  @Test
  void aDestinationThatDoesNotExistFailsForGood() {
    Message lost = Message.builder().type("Nowhere").destination("missing-" + uniqueName())
        .payload(new byte[] {1}).build();

    PublishResult result = closing(publisher(sharedBroker())).publish(List.of(lost));

    assertThat(result.failure(0)).isInstanceOf(PermanentPublishException.class);
  }

  @FaultDrill
  @Test
  void whileTheBrokerIsDownPublishingFailsForNowAndAfterItReturnsNothingIsLost() throws Exception {
    StoppableBroker broker = closing(startOwnBroker());
    String destination = createDestination(broker.address(), uniqueName());
    Publisher publisher = closing(publisher(broker.address()));
    String consumer = uniqueName();
    Subscriber subscriber = subscriber(broker.address(), destination, inbox, consumer, recordSideEffect(consumer));
    start(subscriber);
    List<Message> before = keyedMessages(destination, 5, 10);
    List<Message> during = keyedMessages(destination, 5, 10);
    publishAll(publisher, before, 50);
    awaitHandled(consumer, before.size());

    broker.stop();
    PublishResult refused = publisher.publish(during);
    assertThat(refused.acknowledged()).as("nothing is acknowledged by a broker that is down").isZero();
    assertThat(refused.failures().values()).as("an outage is no reason to dead-letter")
        .noneMatch(e -> e instanceof PermanentPublishException);
    broker.restart();
    brokerRestarted(broker.address(), destination);

    // as the relay does: the same batch again until the broker takes it; a timeout shows the last refusal
    await().atMost(WAIT).pollInterval(Duration.ofMillis(500)).untilAsserted(() ->
        assertThat(publisher.publish(during).failures()).as(() -> "failures publishing the batch again; the broker's log:\n" + broker.recentLog()).isEmpty());
    awaitHandled(consumer, before.size() + during.size());
    subscriber.close();
    assertThat(handledIds(consumer)).hasSize(before.size() + during.size());
    assertThat(bodiesByKey(consumer)).isEqualTo(bodiesByKey(concat(before, during)));
  }

  @FaultDrill
  @Test
  void aSubscriberKilledAfterItsInboxCommitGetsTheMessageAgainAndTheInboxAbsorbsIt(@TempDir Path dir)
      throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    List<Message> sent = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      String body = "k:" + i + (i == 4 ? CrashingSubscriber.CRASH : "");
      sent.add(message(destination, "k", body));
    }
    publishAll(closing(publisher(sharedBroker())), sent, 10);
    String consumer = uniqueName();

    Process child = ChildProcess.start(List.of("-Xmx256m"), CrashingSubscriber.class.getName(),
        List.of(getClass().getName(), sharedBroker(), destination, db.schema(), consumer), dir.resolve("child.log"));
    assertThat(child.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).as("the child halts itself").isTrue();
    assertThat(child.exitValue()).as(Files.readString(dir.resolve("child.log"))).isEqualTo(HALTED_AFTER_COMMIT);
    assertThat(handledIds(consumer)).as("the inbox transaction committed before the halt").contains(sent.get(4).id());

    // newer messages of the key, published while the subscriber was down, must wait for the old ones
    List<Message> later = new ArrayList<>();
    for (int i = 10; i < 20; i++) {
      later.add(message(destination, "k", "k:" + i));
    }
    publishAll(closing(publisher(sharedBroker())), later, 10);
    List<Message> all = concat(sent, later);

    Subscriber next = start(subscriber(sharedBroker(), destination, inbox, consumer, recordSideEffect(consumer)));
    awaitHandled(consumer, all.size());
    await().atMost(WAIT).until(() -> next.duplicates() >= 1);
    assertThat(handledIds(consumer)).as("each side effect once").hasSize(all.size());
    assertThat(bodiesByKey(consumer)).as("in order across the crash").isEqualTo(bodiesByKey(all));
  }

  @Test
  void closeFinishesTheMessageInHandAndTheNextSubscriberTakesTheRest() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    List<Message> sent = keyedMessages(destination, 4, 50);
    publishAll(closing(publisher(sharedBroker())), sent, 100);
    String consumer = uniqueName();
    InboxHandler slow = (tx, m, key) -> {
      Thread.sleep(10);
      recordSideEffect(consumer).handle(tx, m, key);
    };

    Subscriber first = start(subscriber(sharedBroker(), destination, inbox, consumer, slow));
    await().atMost(WAIT).until(() -> handledIds(consumer).size() >= 20);
    first.close();
    int atClose = handledIds(consumer).size();
    await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2))
        .untilAsserted(() -> assertThat(handledIds(consumer)).as("nothing is handled after close returned")
            .hasSize(atClose));

    start(subscriber(sharedBroker(), destination, inbox, consumer, slow));
    awaitHandled(consumer, sent.size());
    assertThat(handledIds(consumer)).hasSize(sent.size());
    assertThat(bodiesByKey(consumer)).isEqualTo(bodiesByKey(sent));
  }

  /**
   * Closing while a message waits for its retry: {@code close()} does not wait out the backoff,
   * and the message goes back to the broker at once, so the next subscriber takes it, and the
   * rest of its key behind it, in order.
   */
  @Test
  void closeDuringARetryBackoffReturnsAtOnceAndTheNextSubscriberTakesTheMessageInOrder() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    List<Message> sent = keyedMessages(destination, 1, 6);
    Message stuck = sent.get(2);
    String consumer = uniqueName();
    AtomicBoolean fixed = new AtomicBoolean();
    AtomicInteger attempts = new AtomicInteger();
    InboxHandler failsUntilFixed = failingOn(stuck, consumer, attempts, () -> !fixed.get(),
        () -> new IllegalStateException("a bug, fixed by the next build"));
    RetryPolicy waitsLong = RetryPolicy.builder().initialDelay(Duration.ofMinutes(5)).maxDelay(Duration.ofMinutes(5))
        .build();
    publishAll(closing(publisher(sharedBroker())), sent, 6);

    Subscriber first = start(subscriber(sharedBroker(), destination, inbox, consumer, failsUntilFixed, waitsLong,
        WhenExhausted.BLOCK));
    await().atMost(WAIT).until(() -> attempts.get() >= 1);
    long closeStarted = System.nanoTime();
    first.close();
    Duration closeTook = Duration.ofNanos(System.nanoTime() - closeStarted);

    assertThat(closeTook).as("close does not wait out a five-minute backoff, nor the 30 s drain timeout")
        .isLessThan(Duration.ofSeconds(20));
    fixed.set(true);
    start(subscriber(sharedBroker(), destination, inbox, consumer, failsUntilFixed));
    awaitHandled(consumer, sent.size());
    assertThat(handledIds(consumer)).doesNotHaveDuplicates().hasSize(sent.size());
    assertThat(bodiesByKey(consumer)).isEqualTo(bodiesByKey(sent));
  }

  @Test
  void messagesWaitingWhenTheSubscriberStartsAreTakenInFewTransactionsInOrderPerKey() throws Exception {
    assumeTrue(takesBatches(), "this transport takes one message per transaction");
    String destination = createDestination(sharedBroker(), uniqueName());
    List<Message> sent = keyedMessages(destination, 3, 40);
    publishAll(closing(publisher(sharedBroker())), sent, 40);
    String consumer = uniqueName();

    start(subscriber(sharedBroker(), destination, inbox, consumer, recordSideEffect(consumer)));

    awaitHandled(consumer, sent.size());
    assertThat(handledIds(consumer)).hasSize(sent.size());
    assertThat(bodiesByKey(consumer)).isEqualTo(bodiesByKey(sent));
    assertThat(inboxTransactions(consumer)).as("inbox transactions for %d messages", sent.size())
        .isLessThan(sent.size() / 4);
  }

  @Test
  void aFailingHandlerIsRetriedUntilItSucceedsAndItsKeyWaitsForIt() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    List<Message> sent = keyedMessages(destination, 2, 20);
    Message flaky = sent.get(10);
    publishAll(closing(publisher(sharedBroker())), sent, 40);
    String consumer = uniqueName();
    AtomicInteger attempts = new AtomicInteger();
    InboxHandler failsThreeTimes = (tx, m, key) -> {
      if (m.id().equals(flaky.id()) && attempts.incrementAndGet() <= 3) {
        throw new IllegalStateException("injected failure " + attempts.get());
      }
      recordSideEffect(consumer).handle(tx, m, key);
    };

    Subscriber subscriber = start(subscriber(sharedBroker(), destination, inbox, consumer, failsThreeTimes));

    awaitHandled(consumer, sent.size());
    assertThat(attempts).hasValue(4);
    assertThat(subscriber.failures()).as("failed attempts counted").isEqualTo(3);
    assertThat(handledIds(consumer)).hasSize(sent.size());
    assertThat(bodiesByKey(consumer)).isEqualTo(bodiesByKey(sent));
  }

  @Test
  void aMessageTheRetryPolicyGivesUpOnIsDeadLetteredItsKeyWaitsBehindItAndOtherKeysFlow() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    List<Message> sent = keyedMessages(destination, 3, 10);
    Message poison = sent.get(3 * 4); // key-0:4
    String consumer = uniqueName();
    AtomicInteger poisonAttempts = new AtomicInteger();
    AtomicBoolean productMissing = new AtomicBoolean(true);
    InboxHandler failsOnThePoison = failingOn(poison, consumer, poisonAttempts, productMissing::get,
        () -> new IllegalStateException("no such product"));
    RetryPolicy threeAttempts = fastRetries().maxAttempts(3).build();
    publishAll(closing(publisher(sharedBroker())), sent, 30);

    Subscriber subscriber = start(subscriber(sharedBroker(), destination, inbox, consumer, failsOnThePoison,
        threeAttempts, WhenExhausted.DEAD_LETTER));

    awaitHandled(consumer, sent.size() - 6);
    await().atMost(WAIT).until(() -> subscriber.parked() == 5);
    assertThat(poisonAttempts).as("the policy's three attempts").hasValue(3);
    assertThat(subscriber.deadLettered()).isEqualTo(1);
    assertThat(bodiesByKey(consumer).get("key-0")).as("the key stops at its dead message")
        .containsExactly("key-0:0", "key-0:1", "key-0:2", "key-0:3");
    assertThat(bodiesByKey(consumer).get("key-1")).as("other keys flow").hasSize(10);
    List<ParkedMessage> parked = inbox.parked(consumer, 100);
    assertThat(parked).extracting(p -> new String(p.message().payload(), StandardCharsets.UTF_8))
        .containsExactly("key-0:4", "key-0:5", "key-0:6", "key-0:7", "key-0:8", "key-0:9");
    assertThat(parked.get(0).attempts()).isEqualTo(3);
    assertThat(parked.get(0).lastError()).contains("no such product");

    // the product is added; an operator asks for a retry (txbox dead-letters retry --consumer), and
    // the running subscriber processes the key in order; its next message flows at once
    productMissing.set(false);
    assertThat(inbox.requestRetry(consumer, "key-0", "operator")).isTrue();
    awaitHandled(consumer, sent.size());
    await().atMost(WAIT).until(() -> inbox.parked(consumer, 100).isEmpty());
    assertThat(inbox.requestRetry(consumer, "key-0", "operator")).as("no longer parked").isFalse();
    Message next = message(destination, "key-0", "key-0:10");
    publishAll(closing(publisher(sharedBroker())), List.of(next), 1);
    awaitHandled(consumer, sent.size() + 1);
    subscriber.close();
    assertThat(bodiesByKey(consumer)).isEqualTo(bodiesByKey(concat(sent, List.of(next))));
    assertThat(handledIds(consumer)).as("each once").doesNotHaveDuplicates();
  }

  @Test
  void aHandlerThatThrowsAnErrorIsRetriedAndDeadLetteredLikeAnyFailureAndTheSubscriberLivesOn() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    List<Message> sent = keyedMessages(destination, 2, 5);
    Message broken = sent.get(2); // key-0:1
    String consumer = uniqueName();
    InboxHandler assertsOnTheBrokenOne = failingOn(broken, consumer, new AtomicInteger(), () -> true,
        () -> new AssertionError("a bug that only this message reaches"));
    RetryPolicy threeAttempts = fastRetries().maxAttempts(3).build();
    publishAll(closing(publisher(sharedBroker())), sent, 10);

    Subscriber subscriber = start(subscriber(sharedBroker(), destination, inbox, consumer, assertsOnTheBrokenOne,
        threeAttempts, WhenExhausted.DEAD_LETTER));

    awaitHandled(consumer, 6); // key-0:0 and the five of key-1
    await().atMost(WAIT).until(() -> subscriber.parked() == 3);
    assertThat(subscriber.deadLettered()).isEqualTo(1);
    assertThat(inbox.parked(consumer, 10).get(0).lastError()).contains("AssertionError");
    assertThat(subscriber.isTroubled()).as("the loop never failed: the Error was the handler's").isFalse();
    Message after = message(destination, "key-1", "key-1:5");
    publishAll(closing(publisher(sharedBroker())), List.of(after), 1);
    awaitHandled(consumer, 7);
  }

  @Test
  void aPermanentErrorIsDeadLetteredAfterOneAttempt() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    Message poison = message(destination, "k", "k:0");
    Message after = message(destination, "j", "j:0");
    String consumer = uniqueName();
    AtomicInteger poisonAttempts = new AtomicInteger();
    InboxHandler rejectsThePoison = failingOn(poison, consumer, poisonAttempts, () -> true,
        () -> new IllegalArgumentException("amount must be positive"));
    RetryPolicy permanent = fastRetries().permanentWhen(e -> e instanceof IllegalArgumentException).build();
    publishAll(closing(publisher(sharedBroker())), List.of(poison, after), 2);

    Subscriber subscriber = start(subscriber(sharedBroker(), destination, inbox, consumer, rejectsThePoison,
        permanent, WhenExhausted.DEAD_LETTER));

    awaitHandled(consumer, 1);
    await().atMost(WAIT).until(() -> subscriber.deadLettered() == 1);
    assertThat(poisonAttempts).hasValue(1);
    assertThat(inbox.parked(consumer, 10)).extracting(p -> p.message().id()).containsExactly(poison.id());
  }

  @Test
  void aBlockingSubscriberHoldsTheKeyPastTheRetryPolicyUntilTheHandlerIsFixed() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    List<Message> sent = keyedMessages(destination, 1, 6);
    Message stuck = sent.get(2);
    String consumer = uniqueName();
    AtomicInteger attempts = new AtomicInteger();
    AtomicBoolean fixed = new AtomicBoolean();
    InboxHandler failsUntilFixed = failingOn(stuck, consumer, attempts, () -> !fixed.get(),
        () -> new IllegalStateException("downstream refuses"));
    RetryPolicy twoAttempts = fastRetries().maxDelay(Duration.ofMillis(50)).maxAttempts(2).build();
    publishAll(closing(publisher(sharedBroker())), sent, 6);

    Subscriber subscriber = start(subscriber(sharedBroker(), destination, inbox, consumer, failsUntilFixed,
        twoAttempts, WhenExhausted.BLOCK));

    await().atMost(WAIT).until(() -> attempts.get() >= 6);
    assertThat(subscriber.deadLettered()).isZero();
    assertThat(bodiesByKey(consumer).get("key-0")).containsExactly("key-0:0", "key-0:1");
    fixed.set(true);
    awaitHandled(consumer, sent.size());
    assertThat(bodiesByKey(consumer)).isEqualTo(bodiesByKey(sent));
    assertThat(inbox.parked(consumer, 10)).isEmpty();
  }

  @Test
  void twoRestartsInARowWithAFailingHandlerDeliverNothingThatWasAlreadyHandled() throws Exception {
    String destination = createDestination(sharedBroker(), uniqueName());
    List<Message> sent = keyedMessages(destination, 1, 20);
    Message stuck = sent.get(10);
    String consumer = uniqueName();
    AtomicBoolean fixed = new AtomicBoolean();
    AtomicInteger attempts = new AtomicInteger();
    InboxHandler failsUntilFixed = failingOn(stuck, consumer, attempts, () -> !fixed.get(),
        () -> new IllegalStateException("a bug, fixed by the third build"));
    publishAll(closing(publisher(sharedBroker())), sent, 20);

    for (int build = 1; build <= 2; build++) {
      int before = attempts.get();
      Subscriber failing = start(subscriber(sharedBroker(), destination, inbox, consumer, failsUntilFixed,
          FAST_RETRIES, WhenExhausted.BLOCK));
      await().atMost(WAIT).until(() -> attempts.get() >= before + 2);
      failing.close();
    }
    fixed.set(true);
    Subscriber third = start(subscriber(sharedBroker(), destination, inbox, consumer, failsUntilFixed));

    awaitHandled(consumer, sent.size());
    assertThat(third.duplicates()).as("nothing before the stuck message came again").isZero();
    assertThat(handledIds(consumer)).doesNotHaveDuplicates().hasSize(sent.size());
    assertThat(bodiesByKey(consumer)).isEqualTo(bodiesByKey(sent));
  }

  // --- helpers ---

  /** Retries within a few hundred milliseconds, ten attempts unless changed. */
  private static RetryPolicy.Builder fastRetries() {
    return RetryPolicy.builder().initialDelay(Duration.ofMillis(20)).maxDelay(Duration.ofMillis(200));
  }

  /**
   * Records the side effect of every message but {@code broken}, on which it counts an attempt
   * and throws {@code error} for as long as {@code stillBroken} says so.
   */
  private InboxHandler failingOn(Message broken, String consumer, AtomicInteger attempts, BooleanSupplier stillBroken,
      Supplier<? extends Throwable> error) {
    return (tx, m, key) -> {
      if (m.id().equals(broken.id()) && stillBroken.getAsBoolean()) {
        attempts.incrementAndGet();
        Throwable failure = error.get();
        if (failure instanceof Error e) {
          throw e;
        }
        throw (Exception) failure;
      }
      recordSideEffect(consumer).handle(tx, m, key);
    };
  }

  private InboxHandler recordSideEffect(String consumer) {
    return (tx, m, key) -> insertSideEffect(tx, db.schema(), consumer, m);
  }

  static void insertSideEffect(Connection tx, String schema, String consumer, Message m) throws SQLException {
    try (PreparedStatement p = tx.prepareStatement("INSERT INTO " + schema + ".side_effect"
        + " (consumer, message_id, key, body) VALUES (?, ?, ?, ?)")) {
      p.setString(1, consumer);
      p.setObject(2, m.id());
      p.setString(3, m.key());
      p.setString(4, new String(m.payload(), StandardCharsets.UTF_8));
      p.executeUpdate();
    }
  }

  /** Messages of {@code keys} keys, interleaved, each key's bodies numbered in order. */
  private static List<Message> keyedMessages(String destination, int keys, int perKey) {
    List<Message> messages = new ArrayList<>();
    for (int i = 0; i < perKey; i++) {
      for (int k = 0; k < keys; k++) {
        messages.add(message(destination, "key-" + k, "key-" + k + ":" + i));
      }
    }
    return messages;
  }

  private static Message message(String destination, String key, String body) {
    return Message.builder().type("ContractEvent").destination(destination).key(key)
        .payload(body.getBytes(StandardCharsets.UTF_8), "text/plain").build();
  }

  private static void publishAll(Publisher publisher, List<Message> messages, int batchSize) {
    for (int from = 0; from < messages.size(); from += batchSize) {
      List<Message> batch = messages.subList(from, Math.min(messages.size(), from + batchSize));
      PublishResult result = publisher.publish(batch);
      assertThat(result.failures()).as("every message of the batch acknowledged").isEmpty();
      assertThat(result.acknowledged()).isEqualTo(batch.size());
    }
  }

  private void awaitHandled(String consumer, int count) {
    try {
      await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> handledIds(consumer).size() >= count);
    } catch (ConditionTimeoutException e) {
      // a hang, not slowness: say where every thread is, so that the failure tells where to look
      Thread.getAllStackTraces().forEach((thread, stack) -> System.err.println("thread " + thread.getName() + " "
          + thread.getState() + String.join("", java.util.Arrays.stream(stack).map(f -> "\n    at " + f).toList())));
      throw e;
    }
  }

  /** How many transactions recorded the consumer's messages: now() is a transaction's start. */
  private int inboxTransactions(String consumer) throws SQLException {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement("SELECT count(DISTINCT processed_at) FROM " + db.schema()
            + ".txbox_inbox WHERE consumer = ?")) {
      p.setString(1, consumer);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  /** Every side effect's message id, duplicates included, in the order they were applied. */
  private List<UUID> handledIds(String consumer) throws SQLException {
    List<UUID> ids = new ArrayList<>();
    for (String[] row : sideEffects(consumer)) {
      ids.add(UUID.fromString(row[0]));
    }
    return ids;
  }

  private Map<String, List<String>> bodiesByKey(String consumer) throws SQLException {
    Map<String, List<String>> byKey = new LinkedHashMap<>();
    for (String[] row : sideEffects(consumer)) {
      byKey.computeIfAbsent(row[1], k -> new ArrayList<>()).add(row[2]);
    }
    return byKey;
  }

  private static Map<String, List<String>> bodiesByKey(List<Message> sent) {
    Map<String, List<String>> byKey = new LinkedHashMap<>();
    for (Message m : sent) {
      byKey.computeIfAbsent(m.key(), k -> new ArrayList<>()).add(new String(m.payload(), StandardCharsets.UTF_8));
    }
    return byKey;
  }

  private List<String[]> sideEffects(String consumer) throws SQLException {
    List<String[]> rows = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement("SELECT message_id, key, body FROM " + db.schema()
            + ".side_effect WHERE consumer = ? ORDER BY seq")) {
      p.setString(1, consumer);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          rows.add(new String[] {rs.getString(1), rs.getString(2), rs.getString(3)});
        }
      }
    }
    return rows;
  }

  private static List<Message> concat(List<Message> a, List<Message> b) {
    List<Message> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  private static byte[] randomBytes(int size) {
    byte[] bytes = new byte[size];
    new Random(size).nextBytes(bytes);
    return bytes;
  }

  private static String uniqueName() {
    return "c" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
  }

  private Subscriber start(Subscriber subscriber) {
    closing(subscriber).start();
    return subscriber;
  }

  private <T extends AutoCloseable> T closing(T resource) {
    toClose.add(resource);
    return resource;
  }

  private static void execute(DataSource dataSource, String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
