package io.txbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.nats.client.Connection;
import io.nats.client.ConsumerContext;
import io.nats.client.FetchConsumeOptions;
import io.nats.client.FetchConsumer;
import io.nats.client.Nats;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.DeliverPolicy;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.Message;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.NatsServer;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** How a subscriber takes its durable over: after a crash, twice in a row, and in a rolling deploy. */
class NatsDurableTest {
  private final String subject = "durable-" + UUID.randomUUID();
  private final String stream = "S_" + subject;
  private final List<AutoCloseable> toClose = new ArrayList<>();
  private TestDatabase db;
  private Inbox inbox;
  private Connection nats;

  @BeforeEach
  void setUp() throws Exception {
    db = TestDatabase.create();
    PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build().migrate();
    inbox = Inbox.create(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build());
    nats = Nats.connect(NatsServer.MACHINE_URL);
    nats.jetStreamManagement().addStream(StreamConfiguration.builder()
        .name(stream).subjects(subject).storageType(StorageType.File).build());
  }

  @AfterEach
  void tearDown() throws Exception {
    for (AutoCloseable c : toClose) {
      c.close();
    }
    nats.jetStreamManagement().deleteStream(stream);
    nats.close();
    db.close();
  }

  @Test
  void aDurableResetTwiceNeverStartsBeforeWhereTheFirstResetStarted() throws Exception {
    publish(100);
    // What a first reset left behind: a durable starting at sequence 51 that acknowledged nothing,
    // whose subscriber then died holding sequence 51 unacknowledged. nats-server 2.9 reports an ack
    // floor of 0 for it.
    nats.jetStreamManagement().addOrUpdateConsumer(stream, ConsumerConfiguration.builder().durable("billing")
        .ackPolicy(AckPolicy.Explicit).ackWait(Duration.ofSeconds(1))
        .deliverPolicy(DeliverPolicy.ByStartSequence).startSequence(51).build());
    ConsumerContext consumer = nats.getConsumerContext(stream, "billing");
    try (FetchConsumer fetch = consumer.fetch(FetchConsumeOptions.builder().maxMessages(1).expiresIn(2000).build())) {
      assertThat(fetch.nextMessage()).as("taken and never acknowledged").isNotNull();
    }
    List<Integer> handled = new CopyOnWriteArrayList<>();

    start(subscriber((tx, m, key) -> handled.add(number(m))));

    await().atMost(Duration.ofSeconds(30)).until(() -> handled.size() >= 50);
    assertThat(handled).as("51 to 100, not the whole stream again").startsWith(51).hasSize(50);
    assertThat(handled.get(handled.size() - 1)).isEqualTo(100);
  }

  @Test
  void aSecondSubscriberOnABusyDurableStandsByAndTakesOverInOrderWhenTheFirstCloses() throws Exception {
    publish(200);
    Map<String, List<Integer>> handledByKey = new LinkedHashMap<>();
    InboxHandler slow = (tx, m, key) -> {
      Thread.sleep(10);
      synchronized (handledByKey) {
        handledByKey.computeIfAbsent(m.key(), k -> new ArrayList<>()).add(number(m));
      }
    };
    NatsSubscriber first = start(subscriber(slow));
    await().atMost(Duration.ofSeconds(30)).until(() -> first.processed() >= 20);

    NatsSubscriber second = start(subscriber(slow)); // a rolling deploy: the new process starts first
    long atStart = first.processed();
    await().atMost(Duration.ofSeconds(30)).until(() -> first.processed() >= atStart + 40);
    assertThat(second.processed()).as("standing by while the first works").isZero();
    first.close();

    await().atMost(Duration.ofSeconds(60)).until(() -> first.processed() + second.processed() >= 200);
    assertThat(second.processed()).isPositive();
    for (List<Integer> numbers : handledByKey.values()) {
      assertThat(numbers).as("each key in order, each message once").isSorted().doesNotHaveDuplicates();
    }
    assertThat(handledByKey.values().stream().mapToInt(List::size).sum()).isEqualTo(200);
  }

  @Test
  void aSubscriberClosedWhileItsHandlerFailsHandsOverAtOnceNotAfterAckWait() throws Exception {
    publish(20);
    AtomicBoolean fixed = new AtomicBoolean();
    List<Integer> handled = new CopyOnWriteArrayList<>();
    InboxHandler failingUntilFixed = (tx, m, key) -> {
      if (!fixed.get()) {
        throw new IllegalStateException("the bug the next deploy fixes");
      }
      handled.add(number(m));
    };
    NatsSubscriber broken = start(NatsSubscriber.builder(inbox, "billing", failingUntilFixed)
        .servers(NatsServer.MACHINE_URL).stream(stream).ackWait(Duration.ofSeconds(30)).build());
    await().atMost(Duration.ofSeconds(30)).until(() -> broken.failures() >= 2);

    broken.close(); // SIGTERM to the broken process: deploy the fix
    fixed.set(true);
    start(NatsSubscriber.builder(inbox, "billing", failingUntilFixed).servers(NatsServer.MACHINE_URL).stream(stream)
        .ackWait(Duration.ofSeconds(30)).build());

    await().atMost(Duration.ofSeconds(10)).until(() -> handled.size() == 20); // AckWait is 30 s
  }

  @Test
  void aDeliveryLostOnItsWayIsHandledBeforeTheMessagesAfterIt() throws Exception {
    publishNumbers(1); // 1, 5 and 9 share a key
    CountDownLatch handlingTheFirst = new CountDownLatch(1);
    CountDownLatch goOn = new CountDownLatch(1);
    List<Integer> handled = new CopyOnWriteArrayList<>();
    start(subscriber((tx, m, key) -> {
      if (number(m) == 1) {
        handlingTheFirst.countDown();
        goOn.await();
      }
      handled.add(number(m));
    }));
    assertThat(handlingTheFirst.await(30, TimeUnit.SECONDS)).isTrue();

    // While the subscriber is busy, message 5 is delivered on its durable and lost on the way:
    // taken by a fetch that never acknowledges it, as when a fetch ends before its messages arrive.
    publishNumbers(5, 9);
    ConsumerContext durable = nats.getConsumerContext(stream, "billing");
    try (FetchConsumer fetch = durable.fetch(FetchConsumeOptions.builder().maxMessages(1).expiresIn(2000).build())) {
      assertThat(number(NatsMessages.toMessage(fetch.nextMessage()))).isEqualTo(5);
    }
    goOn.countDown();

    await().atMost(Duration.ofSeconds(30)).until(() -> handled.size() >= 3);
    assertThat(handled).as("5 before 9, not after AckWait").containsExactly(1, 5, 9);
  }

  private NatsSubscriber subscriber(InboxHandler handler) {
    return NatsSubscriber.builder(inbox, "billing", handler).servers(NatsServer.MACHINE_URL).stream(stream)
        .ackWait(Duration.ofSeconds(2))
        .batchSize(10) // small steps, so that the first subscriber is still busy when the second starts
        .build();
  }

  private NatsSubscriber start(NatsSubscriber subscriber) {
    toClose.add(subscriber);
    return subscriber.start();
  }

  /** Messages 1 to {@code count} over four keys, published as txbox's publisher does. */
  private void publish(int count) throws Exception {
    publishNumbers(IntStream.rangeClosed(1, count).toArray());
  }

  /** Messages with these numbers, number n keyed k(n mod 4). */
  private void publishNumbers(int... numbers) throws Exception {
    List<Message> messages = new ArrayList<>();
    for (int i : numbers) {
      messages.add(Message.builder().type("Invoiced").destination(subject).key("k" + (i % 4))
          .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).build());
    }
    try (NatsPublisher publisher = NatsPublisher.builder().servers(NatsServer.MACHINE_URL).build()) {
      assertThat(publisher.publish(messages).failures()).isEmpty();
    }
  }

  private static int number(Message m) {
    return Integer.parseInt(new String(m.payload(), StandardCharsets.UTF_8));
  }
}
