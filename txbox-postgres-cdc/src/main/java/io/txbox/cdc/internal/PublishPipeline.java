package io.txbox.cdc.internal;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.DeadLetterSink;
import io.txbox.spi.Metrics;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.support.Secrets;
import io.txbox.spi.support.SettleRule;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The logical relay's way to the broker: hands a batch of pending events to the publisher on a
 * thread of its own, waits for the answer while the replication connection is kept alive, and
 * settles every event by core's {@link SettleRule}, a key being the order group: acknowledged,
 * dead-lettered (saved before anything past it can be confirmed), retried after a backoff, or held
 * back behind an earlier event of its key.
 */
final class PublishPipeline implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PublishPipeline.class);

  private final String slot;
  private final Publisher publisher;
  private final DeadLetterSink deadLetters;
  private final SlotCheckpoints checkpoints;
  private final Metrics metrics;
  private final SettleRule rule;
  private final Clock clock;
  private final ExecutorService publishing;
  /** The batches' broker transactions with exactly-once delivery; {@code null} at least once. */
  private final SlotTransactions transactions;
  /**
   * Whether the checkpoint records a publish being retried (see {@link #noteRetrying}); null until
   * this relay wrote it, since a relay that died while retrying left its record behind.
   */
  private Boolean retrying;

  PublishPipeline(StreamSettings settings, Publisher publisher, DeadLetterSink deadLetters,
      SlotCheckpoints checkpoints, Metrics metrics, Clock clock, SlotTransactions transactions) {
    this.slot = settings.slot();
    this.publisher = publisher;
    this.deadLetters = deadLetters;
    this.checkpoints = checkpoints;
    this.metrics = metrics;
    this.rule = new SettleRule(settings.retryPolicy());
    this.clock = clock;
    this.transactions = transactions;
    this.publishing = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "txbox-logical-publish-" + slot);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * A batch with the broker: its entries, each entry's index among the messages sent ({@code -1}
   * for an unreadable one, never sent), the broker's answer to come, and, with exactly-once
   * delivery, the slot's place once it is delivered, or, for a batch of the catch-up, how far the
   * catch-up got then (each {@code null} otherwise).
   */
  record Flight(List<PendingEvents.Entry> batch, int[] indexes, int sent, Future<PublishResult> result,
      StreamProgress progress, CatchUpProgress catchUp) {
    boolean answered() {
      return result.isDone();
    }
  }

  /** What keeps the replication connection alive while a publish waits; nothing before a session. */
  interface KeepAlive {
    void send() throws SQLException;
  }

  /**
   * Hands the readable events to the publisher thread; unreadable ones are dead-lettered when it
   * settles. {@code progress} is the slot's place once the batch is delivered, {@code catchUp} how
   * far the catch-up got then; either may be {@code null}.
   */
  Flight submit(List<PendingEvents.Entry> batch, StreamProgress progress, CatchUpProgress catchUp) {
    List<Message> messages = new ArrayList<>(batch.size());
    int[] indexes = new int[batch.size()];
    for (int i = 0; i < batch.size(); i++) {
      PendingEvents.Entry e = batch.get(i);
      e.sent();
      indexes[i] = e.event().isReadable() ? messages.size() : -1;
      if (e.event().isReadable()) {
        messages.add(e.event().message());
      }
    }
    Future<PublishResult> result = messages.isEmpty()
        ? CompletableFuture.completedFuture(PublishResult.allAcknowledged(0))
        : publishing.submit(() -> {
          try {
            return publisher.publish(messages);
          } catch (RuntimeException e) {
            return PublishResult.allFailed(messages.size(), e);
          }
        });
    return new Flight(batch, indexes, messages.size(), result, progress, catchUp);
  }

  /** Waits for the broker's answer, keeping the replication connection alive meanwhile. */
  PublishResult await(Flight flight, KeepAlive keepAlive, Duration statusInterval) throws SQLException {
    while (true) {
      try {
        return flight.result().get(statusInterval.toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        keepAlive.send(); // a slow broker must not let wal_sender_timeout end the stream
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return PublishResult.allFailed(flight.sent(), e);
      } catch (ExecutionException e) {
        return PublishResult.allFailed(flight.sent(), new IllegalStateException(e.getCause()));
      }
    }
  }

  /** Waits up to {@code most} for the broker's answer, without taking it. */
  void waitBriefly(Flight flight, Duration most) {
    try {
      flight.result().get(most.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException | ExecutionException e) {
      // settled by the next turn of the loop
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Settles every event of {@code flight} from {@code result}. Dead letters are saved before any
   * event counts as done: when they cannot be, this throws and the stream is read again. With
   * exactly-once delivery the batch's transaction is committed, with its place in the stream, only
   * when no event of it is retried; otherwise it is aborted and every event of it is sent again.
   * A commit that throws ends the session: the next one reads the place back from the broker.
   */
  void settle(Flight flight, PublishResult result) {
    List<SettleRule.Outcome> outcomes = rule.settle(sent(flight), result, ThreadLocalRandom.current());
    if (transactions == null) {
      record(flight, outcomes, true, () -> {});
      return;
    }
    boolean retried = outcomes.stream().anyMatch(o -> o.fate() == SettleRule.Fate.RETRY);
    if (retried) {
      transactions.abort("an event failed and is retried");
    }
    Runnable commit = () -> transactions.commit(flight.progress(), flight.catchUp(), flight.batch());
    record(flight, outcomes, !retried, retried ? () -> {} : commit);
  }

  private static List<SettleRule.Sent> sent(Flight flight) {
    List<SettleRule.Sent> sent = new ArrayList<>(flight.batch().size());
    for (int i = 0; i < flight.batch().size(); i++) {
      PendingEvents.Entry e = flight.batch().get(i);
      sent.add(e.event().isReadable()
          ? SettleRule.Sent.sent(e.orderKey(), flight.indexes()[i], e.attempts(), e.failures())
          : SettleRule.Sent.unreadable(e.orderKey(), e.event().unreadable()));
    }
    return sent;
  }

  /**
   * Applies the outcomes: dead letters saved first, then {@code delivering} run (a commit), then
   * every event marked. An acknowledged event counts as done only when {@code delivered}; in an
   * aborted transaction it is sent again.
   */
  private void record(Flight flight, List<SettleRule.Outcome> outcomes, boolean delivered, Runnable delivering) {
    Instant now = clock.instant();
    List<Message> acknowledged = new ArrayList<>();
    List<DeadLetter> letters = new ArrayList<>();
    List<PendingEvents.Entry> lettered = new ArrayList<>();
    Exception retried = null;
    for (int i = 0; i < outcomes.size(); i++) {
      PendingEvents.Entry e = flight.batch().get(i);
      SettleRule.Outcome o = outcomes.get(i);
      switch (o.fate()) {
        case ACKNOWLEDGED -> {
          if (delivered) {
            acknowledged.add(e.event().message());
          }
        }
        case DEAD_LETTERED -> {
          letters.add(letter(e, o.error(), o.attempts()));
          lettered.add(e);
        }
        case RETRY -> {
          e.failed(o.attempts(), now.plus(o.backoff()));
          metrics.retrying(slot, e.event().message(), o.attempts(), o.cause());
          retried = o.cause();
        }
        case HELD_BACK -> e.heldBack();
      }
    }
    deadLetters.saveDeadLetterCopies(letters); // throws when it cannot: the stream is read again
    delivering.run();
    for (int i = 0; i < outcomes.size(); i++) {
      if (outcomes.get(i).fate() == SettleRule.Fate.ACKNOWLEDGED) {
        PendingEvents.Entry e = flight.batch().get(i);
        if (delivered) {
          e.done();
        } else {
          e.heldBack(); // its transaction was aborted
        }
      }
    }
    lettered.forEach(PendingEvents.Entry::done);
    for (DeadLetter d : letters) {
      log.warn("slot {}: dead-lettered {} (type {}, key {}) after {} attempt(s): {}", slot,
          d.message().id(), d.message().type(), d.message().key(), d.attempts(), d.error());
      metrics.deadLettered(d);
    }
    if (!acknowledged.isEmpty()) {
      metrics.published(slot, acknowledged);
    }
    noteRetrying(retried, !acknowledged.isEmpty());
  }

  /**
   * Keeps the checkpoint's record of a publish being retried in step, written only when that
   * changes: a failure starts it, a batch acknowledged without one ends it. A write that fails
   * stops nothing: the stream matters more than its report.
   */
  private void noteRetrying(Exception retried, boolean acknowledged) {
    try {
      if (retried != null && !Boolean.TRUE.equals(retrying)) {
        checkpoints.noteRetrying(Secrets.mask(retried.toString()));
        retrying = true;
      } else if (retried == null && acknowledged && !Boolean.FALSE.equals(retrying)) {
        checkpoints.noteDelivering();
        retrying = false;
      }
    } catch (RuntimeException e) {
      log.warn("slot {}: could not record in {} whether it retries a failed publish: {}", slot,
          checkpoints.table(), e.getMessage());
    }
  }

  private DeadLetter letter(PendingEvents.Entry e, String error, int attempts) {
    return new DeadLetter(slot, 0, new Checkpoint(0, e.event().lsn()), e.event().message(), error, attempts);
  }

  @Override
  public void close() {
    publishing.shutdown();
  }
}
