package io.txbox.nats;

import io.txbox.Message;
import io.txbox.spi.Intake;
import io.txbox.spi.support.IntakeBatches;
import io.txbox.spi.support.Retries;
import io.txbox.spi.support.SubscriberCounters;
import io.txbox.spi.UnreadableMessageException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes the messages of one fetch (or of one key of it) for a {@link NatsSubscriber}, in stream
 * order: up to a batch in one transaction where it can; a message whose handler fails is retried
 * in hand with the retry policy's backoff, telling the server it is still in progress, until it is
 * taken or dead-lettered, or the subscriber closes.
 */
final class InOrderIntake {
  private static final Logger log = LoggerFactory.getLogger(NatsSubscriber.class);
  private final String consumerName;
  private final Intake intake;
  private final Retries retries;
  private final IntakeBatches<io.nats.client.Message> batches;
  private final SubscriberCounters counters;
  private final Duration ackWait;
  private final AtomicBoolean running;

  /**
   * @param running false once the subscriber closes; set false here when interrupted while waiting
   */
  InOrderIntake(String consumerName, Intake intake, Retries retries, IntakeBatches<io.nats.client.Message> batches,
      SubscriberCounters counters, Duration ackWait, AtomicBoolean running) {
    this.consumerName = consumerName;
    this.intake = intake;
    this.retries = retries;
    this.batches = batches;
    this.counters = counters;
    this.ackWait = ackWait;
    this.running = running;
  }

  /** Takes {@code messages} in stream order: in batches where it can, a failing one retried in hand. */
  void take(List<io.nats.client.Message> messages) {
    int next = 0;
    if (running.get()) {
      IntakeBatches.Taken taken = batches.take(messages, NatsMessages::toMessage,
          batch -> batch.forEach(io.nats.client.Message::ack));
      next = taken.count();
      if (taken.failure() != null) {
        io.nats.client.Message failed = messages.get(next);
        takeUntilDone(failed, NatsMessages.toMessage(failed), taken.failure());
        next++;
      }
    }
    for (io.nats.client.Message m : messages.subList(next, messages.size())) {
      if (!running.get()) {
        m.nak(); // not started: another subscriber may have it at once
        continue;
      }
      handleUntilDone(m);
    }
  }

  /** Handles one message, retrying in hand until it succeeds or the subscriber closes. */
  private void handleUntilDone(io.nats.client.Message nats) {
    Message message;
    try {
      message = NatsMessages.toMessage(nats);
    } catch (IllegalArgumentException e) {
      skip(nats, e);
      return;
    }
    takeUntilDone(nats, message, null);
  }

  /**
   * Takes {@code message}, retrying in hand until it succeeds or the subscriber closes;
   * {@code failure}, when not null, is an attempt that already failed (in a batch).
   */
  private void takeUntilDone(io.nats.client.Message nats, Message message, Throwable failure) {
    Retries.Attempts attempts = retries.of(message);
    while (true) {
      if (failure == null) {
        try {
          counters.countReceived(intake.take(message));
          nats.ack();
          return;
        } catch (UnreadableMessageException e) {
          skip(nats, e);
          return;
        } catch (Exception | Error e) {
          failure = e;
        }
      }
      counters.countFailure();
      Optional<Duration> wait = attempts.failed(failure);
      if (wait.isEmpty()) {
        counters.countDeadLetter();
        nats.ack();
        return;
      }
      log.warn("subscriber {}: message {} (stream sequence {}) failed (attempt {}), retrying in {} ms: {}",
          consumerName, message.id(), nats.metaData().streamSequence(), attempts.count(),
          wait.get().toMillis(), failure.toString());
      if (!waitInProgress(nats, wait.get())) {
        nats.nak(); // closing: hand it back rather than wait for AckWait
        return;
      }
      failure = null;
    }
  }

  /** Waits {@code delay}, telling the server the message is still in hand; false when closing. */
  private boolean waitInProgress(io.nats.client.Message nats, Duration delay) {
    long end = System.nanoTime() + delay.toNanos();
    Duration beat = ackWait.dividedBy(3);
    while (running.get() && System.nanoTime() < end) {
      nats.inProgress();
      pause(Duration.ofNanos(Math.min(beat.toNanos(), end - System.nanoTime())));
    }
    return running.get();
  }

  private void skip(io.nats.client.Message nats, RuntimeException e) {
    counters.countRejection();
    log.error("subscriber {}: skipped the unreadable message at stream sequence {}: {}", consumerName,
        nats.metaData().streamSequence(), e.getMessage());
    nats.term();
  }

  private void pause(Duration d) {
    try {
      Thread.sleep(Math.max(0, d.toMillis()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      running.set(false);
    }
  }
}
