package io.txbox.internal;

import io.txbox.Message;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketState;
import io.txbox.spi.Metrics;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.StoredMessage;
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
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay's work loop: read a batch over the owned buckets, publish it, wait for every ack,
 * then checkpoint. Re-reads at once while batches come back full; otherwise sleeps, doubling the
 * pause up to the idle interval, until the store signals new events.
 */
final class RelayLoop implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(RelayLoop.class);
  private static final Duration MIN_PAUSE = Duration.ofMillis(1);
  private static final Duration MAX_ERROR_PAUSE = Duration.ofSeconds(5);
  private static final Duration RETRY_WARNING_INTERVAL = Duration.ofSeconds(10);

  private final RelaySettings settings;
  private final OutboxStore store;
  private final Publisher publisher;
  private final Metrics metrics;
  private final OwnedBuckets buckets;
  private final WakeUp wakeUp;
  private final Clock clock;
  private final RoundPlan plan;
  private final Map<Integer, Integer> backoffLevels = new HashMap<>();
  private volatile boolean running = true;
  private Instant nextRetryWarning = Instant.MIN;

  RelayLoop(
      RelaySettings settings,
      OutboxStore store,
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
  }

  void stop() {
    running = false;
    wakeUp.signal();
  }

  @Override
  public void run() {
    Duration pause = MIN_PAUSE;
    Duration errorPause = MIN_PAUSE;
    while (running) {
      try {
        boolean full = round();
        errorPause = MIN_PAUSE;
        if (full) {
          pause = MIN_PAUSE;
          continue;
        }
        boolean woken = wakeUp.await(pause);
        pause = woken ? MIN_PAUSE : min(pause.multipliedBy(2), settings.idleInterval());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (RuntimeException | Error e) {
        // One bad round (database restarting, a bug in a publisher) must never end the loop.
        log.warn("relay round failed for subscription {}, retrying in {} ms: {}",
            settings.subscription(), errorPause.toMillis(), e.toString(), e);
        errorPause = min(errorPause.multipliedBy(4), MAX_ERROR_PAUSE);
        try {
          wakeUp.await(errorPause);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /** One round; returns whether a bucket came back full, so that more events are waiting. */
  boolean round() {
    giveBackExcess();
    Instant now = clock.instant();
    List<BucketState> due = buckets.due(now);
    if (due.isEmpty()) {
      return false;
    }
    var reads = plan.reads(due);
    List<StoredMessage> rows = store.read(settings.subscription(), reads);
    Map<Integer, List<StoredMessage>> byBucket = groupByBucket(rows);
    plan.rememberBusy(byBucket.keySet());
    if (rows.isEmpty()) {
      return false;
    }
    publishAndCheckpoint(due, byBucket, now);
    return reads.stream()
        .anyMatch(r -> byBucket.getOrDefault(r.bucket(), List.of()).size() >= r.limit());
  }

  private void publishAndCheckpoint(
      List<BucketState> due, Map<Integer, List<StoredMessage>> byBucket, Instant now) {
    List<Message> batch = new ArrayList<>();
    Map<Integer, List<RoundOutcome.Sent>> sent = new LinkedHashMap<>();
    Map<Integer, Instant> heldUntil = new HashMap<>();
    byBucket.forEach((bucket, events) -> {
      List<RoundOutcome.Sent> bucketSent = new ArrayList<>();
      for (StoredMessage row : events) {
        Instant availableAt = row.message().availableAt();
        if (availableAt != null && availableAt.isAfter(now)) {
          heldUntil.put(bucket, availableAt); // order is kept: later events wait for it
          break;
        }
        bucketSent.add(new RoundOutcome.Sent(row, batch.size()));
        batch.add(row.message());
      }
      sent.put(bucket, bucketSent);
    });
    PublishResult result = publish(batch);
    boolean brokerUp = result.acknowledged() > 0;
    RoundOutcome outcome = new RoundOutcome(
        settings.subscription(), settings.retryPolicy(), ThreadLocalRandom.current(), backoffLevels);
    for (BucketState state : due) {
      List<RoundOutcome.Sent> bucketSent = sent.get(state.bucket());
      if (bucketSent != null) {
        outcome.settle(state, bucketSent, result, heldUntil.get(state.bucket()), brokerUp, now);
      }
    }
    save(outcome);
  }

  private PublishResult publish(List<Message> batch) {
    if (batch.isEmpty()) {
      return PublishResult.allAcknowledged(0);
    }
    try {
      return publisher.publish(batch);
    } catch (RuntimeException e) {
      return PublishResult.allFailed(batch.size(), e);
    }
  }

  private void save(RoundOutcome outcome) {
    Set<Integer> lost = store.saveProgress(
        settings.subscription(), settings.instanceId(), outcome.progress, outcome.deadLetters);
    if (!lost.isEmpty()) {
      log.warn("subscription {}: lost the lease on buckets {} during a round; their new owner"
          + " sends their events again", settings.subscription(), lost);
      buckets.remove(lost);
    }
    for (BucketProgress p : outcome.progress) {
      if (!lost.contains(p.bucket())) {
        buckets.update(new BucketState(p.bucket(), p.checkpoint(), p.attempts(), p.nextAttemptAt()));
      }
    }
    outcome.retries.forEach(r -> metrics.retrying(settings.subscription(), r.message(), r.attempts(), r.error()));
    warnOfRetries(outcome.retries);
    outcome.deadLetters.forEach(d -> {
      log.warn("subscription {}: dead-lettered {} (type {}, key {}) after {} attempt(s): {}",
          d.subscription(), d.message().id(), d.message().type(), d.message().key(), d.attempts(),
          d.error());
      metrics.deadLettered(d);
    });
    if (!outcome.acknowledged.isEmpty()) {
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
        first.attempts(), RoundOutcome.describe(first.error()));
  }

  /** Gives back buckets above the fair share, between rounds so that none is mid-publish. */
  private void giveBackExcess() {
    List<Integer> excess = buckets.excess();
    if (!excess.isEmpty()) {
      store.releaseBuckets(settings.subscription(), settings.instanceId(), excess);
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
