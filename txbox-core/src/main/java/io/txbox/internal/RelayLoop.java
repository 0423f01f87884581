package io.txbox.internal;

import io.txbox.DeadLetter;
import io.txbox.Delivery;
import io.txbox.Message;
import io.txbox.internal.OwnedBuckets.Lease;
import io.txbox.spi.BucketRead;
import io.txbox.spi.Metrics;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.RelayStore;
import io.txbox.spi.StoredMessage;
import io.txbox.spi.TransactionalPublisher;
import io.txbox.spi.support.LoopGuard;
import io.txbox.spi.support.RetryBudget;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay's work loop: read a batch over the owned buckets, publish it, wait for every ack,
 * then checkpoint. Re-reads at once while batches come back full; otherwise sleeps, doubling the
 * pause up to the idle interval, until the store signals new events.
 *
 * <p>Every step that acts for a bucket (read, hand to the publisher, send, checkpoint) first checks
 * that this instance still holds the bucket's lease within its proven deadline, so a relay that
 * was frozen or cut off never sends or saves for a bucket another instance may have taken.
 */
final class RelayLoop implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(RelayLoop.class);
  private static final Duration MIN_PAUSE = Duration.ofMillis(1);
  private static final Duration MAX_ERROR_PAUSE = Duration.ofSeconds(5);
  private static final Duration RETRY_WARNING_INTERVAL = Duration.ofSeconds(10);
  private static final Duration BUSY_PAUSE = Duration.ofMillis(16);
  private static final Duration RECENTLY_BUSY = Duration.ofSeconds(1);

  private final RelaySettings settings;
  private final RelayStore store;
  private final Publisher publisher;
  private final Metrics metrics;
  private final OwnedBuckets buckets;
  private final WakeUp wakeUp;
  private final Clock clock;
  private final RoundPlan plan;
  private final Map<Integer, Integer> backoffLevels = new HashMap<>();
  private final ExecutorService publishing;
  private final LoopGuard guard;
  /** Exactly-once delivery's part, or null for at-least-once. */
  private final ExactlyOnce exactlyOnce;
  private InFlight inFlight;
  private boolean lastRoundFoundEvents;
  private Instant lastEventsAt = Instant.MIN;
  private Duration pause = MIN_PAUSE;
  private Duration errorPause = MIN_PAUSE;
  private volatile boolean running = true;
  private Instant nextRetryWarning = Instant.MIN;

  RelayLoop(
      RelaySettings settings,
      RelayStore store,
      Publisher publisher,
      Metrics metrics,
      OwnedBuckets buckets,
      WakeUp wakeUp,
      Clock clock) {
    this.settings = settings;
    this.store = store;
    this.publisher = publisher;
    this.metrics = metrics;
    this.buckets = buckets;
    this.wakeUp = wakeUp;
    this.clock = clock;
    this.plan = new RoundPlan(settings.batchSize());
    this.guard = new LoopGuard("txbox relay of subscription " + settings.subscription());
    this.exactlyOnce = settings.delivery() == Delivery.EXACTLY_ONCE
        ? new ExactlyOnce(settings, (TransactionalPublisher) publisher, store, buckets, metrics)
        : null;
    this.publishing = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "txbox-publish-" + settings.subscription());
      t.setDaemon(true);
      return t;
    });
  }

  void stop() {
    running = false;
    wakeUp.signal();
  }

  @Override
  public void run() {
    try {
      work();
    } finally {
      publishing.shutdown();
    }
  }

  private void work() {
    while (running && !Thread.currentThread().isInterrupted()) {
      if (guard.attempt(this::turn)) {
        errorPause = MIN_PAUSE;
      } else if (!Thread.currentThread().isInterrupted()) {
        // One bad round (database restarting, a bug in a publisher, an OutOfMemoryError that
        // freed its memory as it unwound) never ends the loop: the guard logged it.
        recover();
      }
    }
    drain();
  }

  /** One round, then the pause its outcome calls for. */
  private void turn() throws InterruptedException {
    boolean full = round();
    if (lastRoundFoundEvents) {
      lastEventsAt = clock.instant();
    }
    if (full) {
      pause = MIN_PAUSE;
      return;
    }
    boolean woken = wakeUp.await(pause);
    pause = woken ? MIN_PAUSE : min(pause.multipliedBy(2), longestPause());
  }

  /** After a failed round: waits out the batch in flight unsaved, then a pause that grows with each failure. */
  private void recover() {
    log.info("subscription {}: reading again from the checkpoints in {} ms", settings.subscription(),
        errorPause.toMillis());
    try {
      abandonInFlight();
      if (exactlyOnce != null) {
        exactlyOnce.afterFailedRound();
      }
      wakeUp.await(errorPause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    } catch (RuntimeException e) {
      log.warn("subscription {}: could not wait out the batch in flight: {}", settings.subscription(), e.toString());
    }
    errorPause = min(errorPause.multipliedBy(4), MAX_ERROR_PAUSE);
  }

  /** Whether the last round failed. */
  boolean isTroubled() {
    return guard.isTroubled();
  }

  /** On stop: the batch in flight is finished and checkpointed, as a graceful stop promises. */
  private void drain() {
    try {
      finishInFlight();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      log.warn("subscription {}: could not checkpoint the last batch on stop; it is sent again: {}",
          settings.subscription(), e.toString());
    }
  }

  /**
   * One round, pipelined: reads the next batch while the previous one is being published, then
   * settles the previous one and hands the next to the publisher before saving the checkpoints
   * (exactly-once commits the previous one's transaction first: see {@link #exactlyOnceRound}).
   * At most one batch is in flight. A bucket whose event failed or is delayed has its read-ahead
   * dropped and is read again from its checkpoint, so nothing is sent out of order or skipped.
   *
   * @return whether more work is waiting: a bucket came back full, or a batch is in flight
   */
  boolean round() throws InterruptedException {
    if (inFlight != null && !buckets.excess().isEmpty()) {
      finishInFlight(); // never give a bucket back while its events are in flight
    }
    giveBackExcess();
    Instant now = clock.instant();
    List<Lease> due = buckets.due(now);
    if (exactlyOnce != null) {
      exactlyOnce.takeOver(due);
    }
    Map<Lease, List<StoredMessage>> byLease = new LinkedHashMap<>();
    boolean full = false;
    lastRoundFoundEvents = false;
    if (!due.isEmpty()) {
      Map<Integer, Lease> leases = due.stream().collect(Collectors.toMap(Lease::bucket, Function.identity()));
      List<BucketRead> reads = plan.reads(due.stream().map(Lease::state).toList()).stream()
          .map(r -> new BucketRead(r.bucket(), leases.get(r.bucket()).readFrom(), r.limit()))
          .toList();
      Map<Integer, List<StoredMessage>> byBucket = groupByBucket(store.read(settings.subscription(), reads));
      lastRoundFoundEvents = !byBucket.isEmpty();
      plan.rememberBusy(byBucket.keySet());
      full = reads.stream().anyMatch(r -> byBucket.getOrDefault(r.bucket(), List.of()).size() >= r.limit());
      byBucket.forEach((bucket, rows) -> {
        Lease lease = leases.get(bucket);
        if (lease != null) { // a store returning a bucket it was not asked for is ignored
          byLease.put(lease, rows);
        }
      });
    }
    if (exactlyOnce != null) {
      return exactlyOnceRound(byLease, now) || full;
    }
    if (inFlight == null) {
      submit(byLease, now);
    } else {
      RoundOutcome previous = settle(inFlight);
      inFlight = null;
      byLease.keySet().removeIf(lease -> previous.stopped(lease.bucket()));
      submit(byLease, now); // published while the previous checkpoints are saved
      save(previous);
    }
    return full || inFlight != null;
  }

  /**
   * Exactly-once's half of a round: the batch just read waited while the previous one was with the
   * broker; that one is settled and its transaction committed (or aborted) before anything of the
   * next is sent, since one producer's records join its open transaction. An abort rewinds every
   * bucket, so the batch read ahead is dropped and read again from the checkpoints.
   *
   * @return whether a batch is in flight
   */
  private boolean exactlyOnceRound(Map<Lease, List<StoredMessage>> byLease, Instant now) throws InterruptedException {
    if (inFlight != null) {
      RoundOutcome previous = settle(inFlight);
      inFlight = null;
      if (!save(previous)) {
        return false;
      }
      byLease.keySet().removeIf(lease -> previous.stopped(lease.bucket()));
    }
    submit(byLease, now);
    return inFlight != null;
  }

  /**
   * The longest pause before the next poll. Reads come back empty while concurrent writers hold
   * the snapshot horizon back, so an empty read right after events is no sign of idleness: for a
   * second after the last events the pause stays short, and only then grows to the idle interval.
   */
  private Duration longestPause() {
    boolean recentlyBusy = clock.instant().isBefore(lastEventsAt.plus(RECENTLY_BUSY));
    return recentlyBusy ? min(BUSY_PAUSE, settings.idleInterval()) : settings.idleInterval();
  }

  /**
   * Hands the events to the publisher thread; a delayed event stops its bucket there. An
   * unreadable row is not sent: settling dead-letters it in its place in the bucket.
   */
  private void submit(Map<Lease, List<StoredMessage>> byLease, Instant now) {
    List<Message> batch = new ArrayList<>();
    List<Lease> senders = new ArrayList<>();
    Map<Lease, List<RoundOutcome.Sent>> sent = new LinkedHashMap<>();
    Map<Lease, Instant> heldUntil = new HashMap<>();
    byLease.forEach((lease, rows) -> {
      if (!buckets.holds(lease)) {
        return; // lost, or past its proven deadline, since the read
      }
      List<RoundOutcome.Sent> leaseSent = new ArrayList<>();
      for (StoredMessage row : rows) {
        if (!row.isReadable()) {
          leaseSent.add(new RoundOutcome.Sent(row, -1));
          continue;
        }
        String deadLettered = exactlyOnce == null ? null : exactlyOnce.deadLettered(row);
        if (deadLettered != null) {
          leaseSent.add(new RoundOutcome.Sent(row, -1, deadLettered));
          continue;
        }
        Instant availableAt = row.message().availableAt();
        if (availableAt != null && availableAt.isAfter(now)) {
          heldUntil.put(lease, availableAt); // order is kept: later events wait for it
          break;
        }
        leaseSent.add(new RoundOutcome.Sent(row, batch.size()));
        batch.add(row.message());
        senders.add(lease);
      }
      sent.put(lease, leaseSent);
      if (!leaseSent.isEmpty()) {
        lease.readUpTo(leaseSent.get(leaseSent.size() - 1).row().checkpoint());
      }
    });
    if (!sent.isEmpty()) {
      inFlight = new InFlight(sent, heldUntil, batch.size(), now,
          publishing.submit(() -> publish(batch, senders)));
    }
  }

  /** Waits for the batch in flight, then saves its checkpoints. */
  private void finishInFlight() throws InterruptedException {
    if (inFlight != null) {
      RoundOutcome outcome = settle(inFlight);
      inFlight = null;
      save(outcome);
    }
  }

  /** Turns the broker's answers into checkpoints, in memory, from each bucket's current state. */
  private RoundOutcome settle(InFlight batch) throws InterruptedException {
    PublishResult result = batch.await();
    RoundOutcome outcome = new RoundOutcome(
        settings.subscription(), settings.retryPolicy(), ThreadLocalRandom.current(), backoffLevels);
    batch.sent().forEach((lease, leaseSent) -> {
      if (!buckets.holds(lease)) {
        // Lost, given back, or past its proven deadline: nothing may be saved for it. If the
        // lease is renewed later, the bucket is read again from its checkpoint.
        lease.rewind();
        outcome.dropped(lease);
        return;
      }
      outcome.settle(lease, leaseSent, result, batch.heldUntil().get(lease), batch.readAt());
      if (outcome.stopped(lease.bucket())) {
        lease.rewind();
      }
    });
    return outcome;
  }

  /** After an error: waits out the batch in flight without saving, and reads from the checkpoints again. */
  private void abandonInFlight() throws InterruptedException {
    if (inFlight != null) {
      inFlight.await();
      inFlight = null;
    }
    buckets.rewindAll();
  }

  /**
   * Runs on the publisher thread. Leases are checked once more right before the send, since the
   * batch may have waited behind the previous one: events of a bucket no longer held are not
   * sent, and fail in the result (settling skips that bucket anyway).
   */
  private PublishResult publish(List<Message> batch, List<Lease> senders) {
    if (batch.isEmpty()) {
      return PublishResult.allAcknowledged(0);
    }
    Map<Lease, Boolean> held = new HashMap<>();
    List<Message> sendable = new ArrayList<>(batch.size());
    List<Integer> indexes = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      if (held.computeIfAbsent(senders.get(i), buckets::holds)) {
        sendable.add(batch.get(i));
        indexes.add(i);
      }
    }
    if (sendable.size() == batch.size()) {
      return send(batch);
    }
    log.warn("subscription {}: {} event(s) not sent: their buckets' leases ended before the send",
        settings.subscription(), batch.size() - sendable.size());
    PublishResult partial = send(sendable);
    Map<Integer, Exception> failures = new HashMap<>();
    Exception notHeld = new IllegalStateException("not sent: the bucket's lease ended before the send");
    for (int i = 0; i < batch.size(); i++) {
      failures.put(i, notHeld);
    }
    for (int j = 0; j < indexes.size(); j++) {
      Exception error = partial.failure(j);
      if (error == null) {
        failures.remove(indexes.get(j));
      } else {
        failures.put(indexes.get(j), error);
      }
    }
    return PublishResult.of(batch.size(), failures);
  }

  private PublishResult send(List<Message> batch) {
    if (batch.isEmpty()) {
      return PublishResult.allAcknowledged(0);
    }
    try {
      return publisher.publish(batch);
    } catch (RuntimeException e) {
      return PublishResult.allFailed(batch.size(), e);
    }
  }

  /**
   * Saves the checkpoints of the buckets still held within their deadline; the store saves only
   * where this instance's lease is still unexpired in the database too. Exactly-once commits the
   * round's transaction first, or aborts it.
   *
   * @return false when exactly-once aborted the round: every bucket is read again from its checkpoint
   */
  private boolean save(RoundOutcome outcome) {
    if (exactlyOnce != null) {
      boolean committed = exactlyOnce.commitOrAbort(outcome) != null;
      if (committed) {
        saveProgress(outcome, List.of()); // the broker committed: the store's checkpoints follow (letters saved before)
      }
      report(outcome, committed);
      return committed;
    }
    Set<Integer> expired = outcome.retainHeld(buckets::holds);
    if (!expired.isEmpty()) {
      log.warn("subscription {}: buckets {} passed their lease deadline before their checkpoints were"
          + " saved; they are read again from their checkpoints", settings.subscription(), expired);
    }
    saveProgress(outcome, outcome.deadLetters);
    report(outcome, true);
    return true;
  }

  private void saveProgress(RoundOutcome outcome, List<DeadLetter> deadLetters) {
    Set<Integer> lost = store.saveProgress(
        settings.subscription(), settings.member(), outcome.progress, deadLetters);
    if (!lost.isEmpty()) {
      log.warn("subscription {}: lost the lease on buckets {} during a round; their new owner"
          + " sends their events again", settings.subscription(), lost);
      buckets.remove(lost);
    }
    outcome.saved(lost).forEach(buckets::update);
  }

  /** Logs and counts what became of the round's events; {@code delivered}: its acknowledgements stand. */
  private void report(RoundOutcome outcome, boolean delivered) {
    outcome.retries.forEach(r -> metrics.retrying(settings.subscription(), r.message(), r.attempts(), r.error()));
    warnOfRetries(outcome.retries);
    outcome.deadLetters.forEach(d -> {
      if (d.message() == null) {
        log.warn("subscription {}: dead-lettered the row at {} of bucket {}: {}",
            d.subscription(), d.position(), d.bucket(), d.error());
      } else {
        log.warn("subscription {}: dead-lettered {} (type {}, key {}) after {} attempt(s): {}",
            d.subscription(), d.message().id(), d.message().type(), d.message().key(), d.attempts(),
            d.error());
      }
      metrics.deadLettered(d);
    });
    if (delivered && !outcome.acknowledged.isEmpty()) {
      metrics.published(settings.subscription(), outcome.acknowledged);
    }
  }

  /** One line per {@link #RETRY_WARNING_INTERVAL} while events fail, so an outage is seen but not spammed. */
  private void warnOfRetries(List<RoundOutcome.Retry> retries) {
    Instant now = clock.instant();
    if (retries.isEmpty() || now.isBefore(nextRetryWarning)) {
      return;
    }
    nextRetryWarning = now.plus(RETRY_WARNING_INTERVAL);
    RoundOutcome.Retry first = retries.get(0);
    log.warn("subscription {}: {} bucket(s) failed to publish and will retry with backoff; first: event {}"
        + " (attempt {}): {}", settings.subscription(), retries.size(), first.message().id(),
        first.attempts(), RetryBudget.describe(first.error()));
  }

  /** Gives back buckets above the fair share, between rounds so that none is mid-publish. */
  private void giveBackExcess() {
    List<Integer> excess = buckets.excess();
    if (!excess.isEmpty()) {
      store.releaseBuckets(settings.subscription(), settings.member(), excess);
      buckets.remove(excess);
      excess.forEach(backoffLevels::remove);
      log.info("subscription {}: gave back buckets {} to other instances", settings.subscription(), excess);
      metrics.bucketsOwned(settings.subscription(), buckets.size());
    }
  }

  private static Map<Integer, List<StoredMessage>> groupByBucket(List<StoredMessage> rows) {
    Map<Integer, List<StoredMessage>> byBucket = new LinkedHashMap<>();
    for (StoredMessage row : rows) {
      byBucket.computeIfAbsent(row.bucket(), b -> new ArrayList<>()).add(row);
    }
    // The store reads each bucket in log order; sorting here makes that independent of its plan.
    byBucket.values().forEach(events -> events.sort(Comparator.comparing(StoredMessage::checkpoint)));
    return byBucket;
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }
}
