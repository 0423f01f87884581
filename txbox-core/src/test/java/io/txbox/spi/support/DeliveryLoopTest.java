package io.txbox.spi.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.HandlerException;
import io.txbox.Message;
import io.txbox.Receipt;
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import io.txbox.spi.Intake;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The delivery loop's rules, which every broker's subscriber follows: what is taken, retried,
 * dead-lettered, rejected and released, and what closing and an interrupt do. The transports'
 * contract tests run the same loop against each real broker.
 */
class DeliveryLoopTest {
  /** A day at most; with full jitter, a wait under ten seconds comes once in 8,640 retries. */
  private static final RetryPolicy SLOW = RetryPolicy.builder()
      .initialDelay(Duration.ofDays(1)).maxDelay(Duration.ofDays(1)).maxAttempts(3).build();
  private static final RetryPolicy FAST = RetryPolicy.builder()
      .initialDelay(Duration.ofMillis(1)).maxDelay(Duration.ofMillis(1)).maxAttempts(3).build();

  private final List<Message> taken = new CopyOnWriteArrayList<>();
  private final Set<Message> failing = ConcurrentHashMap.newKeySet();
  private final AtomicInteger attempts = new AtomicInteger();
  private final List<Message> deadLettered = new CopyOnWriteArrayList<>();
  private final Broker broker = new Broker();

  @Test
  void messagesAreTakenInOrderAndAcknowledged() {
    List<Message> sent = messages(3);

    loop(FAST, WhenExhausted.DEAD_LETTER).takeInOrder(sent, broker);

    assertThat(taken).containsExactlyElementsOf(sent);
    assertThat(broker.acknowledged).containsExactlyElementsOf(sent);
    assertThat(broker.released).isEmpty();
  }

  @Test
  void closingDuringABackoffReleasesTheWaitingMessageAndTheRestAtOnce() throws Exception {
    List<Message> sent = messages(3);
    failing.add(sent.get(1));
    DeliveryLoop loop = loop(SLOW, WhenExhausted.BLOCK);
    Thread worker = new Thread(() -> loop.takeInOrder(sent, broker));
    worker.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> attempts.get() == 1);

    loop.close();
    worker.join(Duration.ofSeconds(10).toMillis());

    assertThat(worker.isAlive()).as("close does not wait out a backoff of up to a day").isFalse();
    assertThat(broker.acknowledged).containsExactly(sent.get(0));
    assertThat(broker.released).as("the waiting message and the one behind it, in order")
        .containsExactly(sent.get(1), sent.get(2));
    assertThat(attempts).as("no attempt after close").hasValue(1);
  }

  @Test
  void anInterruptDuringABackoffReleasesWhatTheThreadHoldsAndTheThreadKeepsItsInterrupt() throws Exception {
    List<Message> sent = messages(2);
    failing.add(sent.get(0));
    DeliveryLoop loop = loop(SLOW, WhenExhausted.BLOCK);
    AtomicBoolean stillInterrupted = new AtomicBoolean();
    Thread worker = new Thread(() -> {
      loop.takeInOrder(sent, broker);
      stillInterrupted.set(Thread.currentThread().isInterrupted());
    });
    worker.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> attempts.get() == 1);

    worker.interrupt();
    worker.join(Duration.ofSeconds(10).toMillis());

    assertThat(worker.isAlive()).isFalse();
    assertThat(broker.released).containsExactlyElementsOf(sent);
    assertThat(stillInterrupted).isTrue();
    assertThat(loop.isOpen()).as("an interrupt stops one thread, not the subscriber").isTrue();
  }

  @Test
  void afterCloseNothingIsTakenAndEverythingIsReleased() {
    List<Message> sent = messages(3);
    DeliveryLoop loop = loop(FAST, WhenExhausted.DEAD_LETTER);
    loop.close();

    loop.takeInOrder(sent, broker);

    assertThat(taken).isEmpty();
    assertThat(broker.released).containsExactlyElementsOf(sent);
  }

  @Test
  void aMessageThePolicyGivesUpOnIsDeadLetteredAcknowledgedAndTheRestFlow() {
    List<Message> sent = messages(3);
    failing.add(sent.get(1));
    DeliveryLoop loop = loop(FAST, WhenExhausted.DEAD_LETTER);

    loop.takeInOrder(sent, broker);

    assertThat(deadLettered).containsExactly(sent.get(1));
    assertThat(broker.acknowledged).containsExactlyElementsOf(sent);
    assertThat(loop.counters().failures()).isEqualTo(3);
    assertThat(loop.counters().deadLettered()).isEqualTo(1);
    assertThat(loop.counters().processed()).isEqualTo(2);
  }

  @Test
  void anUnreadableMessageIsRejectedAndCountedAndTheRestFlow() {
    List<Message> sent = messages(3);
    broker.unreadable.add(sent.get(0));
    DeliveryLoop loop = loop(FAST, WhenExhausted.DEAD_LETTER);

    loop.takeInOrder(sent, broker);

    assertThat(broker.rejected).containsExactly(sent.get(0));
    assertThat(broker.acknowledged).containsExactly(sent.get(1), sent.get(2));
    assertThat(loop.counters().rejected()).isEqualTo(1);
  }

  @Test
  void whileAMessageWaitsForItsRetryTheBrokerIsToldItIsStillInHand() throws Exception {
    List<Message> sent = messages(1);
    failing.add(sent.get(0));
    broker.progressInterval = Duration.ofMillis(10);
    DeliveryLoop loop = loop(SLOW, WhenExhausted.BLOCK);
    Thread worker = new Thread(() -> loop.takeInOrder(sent, broker));
    worker.start();

    await().atMost(Duration.ofSeconds(10)).until(() -> broker.inProgress.get() >= 3);
    loop.close();
    worker.join(Duration.ofSeconds(10).toMillis());

    assertThat(attempts).as("still the first wait").hasValue(1);
    assertThat(broker.released).containsExactlyElementsOf(sent);
  }

  private DeliveryLoop loop(RetryPolicy policy, WhenExhausted whenExhausted) {
    return new DeliveryLoop(new Intake() {
      @Override
      public String consumer() {
        return "inventory";
      }

      @Override
      public Receipt take(Message message) {
        if (failing.contains(message)) {
          attempts.incrementAndGet();
          throw new HandlerException("inventory", message, new IllegalStateException("injected"));
        }
        taken.add(message);
        return Receipt.PROCESSED;
      }

      @Override
      public boolean deadLetter(Message message, Throwable error, int attempts) {
        deadLettered.add(message);
        return true;
      }
    }, policy, whenExhausted, 1, DeliveryLoopTest.class);
  }

  private static List<Message> messages(int count) {
    return IntStream.range(0, count)
        .mapToObj(i -> Message.builder().type("OrderPlaced").destination("orders").key("k")
            .payload(("m" + i).getBytes(StandardCharsets.UTF_8)).build())
        .toList();
  }

  /** A broker that records how each message was settled; its items are the messages themselves. */
  private static final class Broker implements DeliveryLoop.Settlement<Message> {
    final List<Message> acknowledged = new CopyOnWriteArrayList<>();
    final List<Message> released = new CopyOnWriteArrayList<>();
    final List<Message> rejected = new CopyOnWriteArrayList<>();
    final Set<Message> unreadable = ConcurrentHashMap.newKeySet();
    final AtomicInteger inProgress = new AtomicInteger();
    volatile Duration progressInterval;

    @Override
    public Message read(Message item) {
      if (unreadable.contains(item)) {
        throw new IllegalArgumentException("txbox-id is missing");
      }
      return item;
    }

    @Override
    public void acknowledge(Message item) {
      acknowledged.add(item);
    }

    @Override
    public void reject(Message item, RuntimeException why) {
      rejected.add(item);
    }

    @Override
    public void release(List<Message> items) {
      released.addAll(items);
    }

    @Override
    public Duration progressInterval() {
      return progressInterval;
    }

    @Override
    public void inProgress(Message item) {
      inProgress.incrementAndGet();
    }
  }
}
