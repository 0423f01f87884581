package io.txbox.jdbc;

import io.txbox.spi.Backlog;
import io.txbox.spi.OpenTransaction;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * What an operator asks first: is delivery moving, who relays what, what is stuck and why. Read
 * by {@link OperatorStore#status(int)} in one transaction; {@code txbox status} prints it.
 *
 * <pre>{@code
 * StoreStatus status = store.status(1000);
 * status.subscriptions().forEach(s -> System.out.println(s.name() + ": " + s.pending() + " pending"));
 * }</pre>
 *
 * @param subscriptions each subscription's backlog and relays
 * @param stalledBuckets buckets whose next event failed and waits for its retry, most attempts first
 *     (attempts stay 0 during an outage, when nothing gets through)
 * @param outboxDeadLetters dead letters per subscription
 * @param inboxDeadLetters dead and parked messages per consumer
 * @param oldestOpenTransaction the oldest write transaction still open, which holds delivery back,
 *     once it has been open {@link #OPEN_TRANSACTION_SHOWN_AFTER} (a shorter one is ordinary traffic)
 * @param outboxPartitions the partitions of a partitioned outbox; empty for a plain table
 * @param waitingForFirstRelay while no relay has ever opened a subscription on these tables: the
 *     events that wait in the log for one; empty once any subscription exists
 * @param idleBuckets buckets a live lease holds whose next event has waited longer than {@link
 *     #NOT_MOVING_AFTER} while their checkpoint stayed where it was, without a failure to retry:
 *     leases renewed by a relay that publishes nothing
 * @param fencedRelays relay instances the broker fenced at least once (exactly-once delivery),
 *     last fenced first, at most {@link #MAX_FENCED_RELAYS}: kept while the instance's row is, so
 *     counted since the instance started
 */
public record StoreStatus(
    List<Subscription> subscriptions,
    List<StalledBucket> stalledBuckets,
    List<IdleBucket> idleBuckets,
    List<OutboxDeadLetters> outboxDeadLetters,
    List<InboxDeadLetters> inboxDeadLetters,
    Optional<OpenTransaction> oldestOpenTransaction,
    Optional<OutboxPartitions> outboxPartitions,
    Optional<Backlog> waitingForFirstRelay,
    List<FencedRelay> fencedRelays) {

  /**
   * How long a held bucket's next event may wait, its checkpoint unmoved and no retry pending,
   * before the bucket counts as held by a relay that does not work it: past any round, retry
   * backoff or lease handover of a working relay, and well before the pending-age limit.
   */
  public static final Duration NOT_MOVING_AFTER = Duration.ofSeconds(60);

  /** How long a transaction must have been open before the status names it. */
  public static final Duration OPEN_TRANSACTION_SHOWN_AFTER = Duration.ofSeconds(1);

  /** Most fenced relays listed. */
  public static final int MAX_FENCED_RELAYS = 100;

  /** How many fences make a relay one that keeps losing its buckets, when the last is recent. */
  public static final int FENCED_REPEATEDLY = 3;

  /** How recent a relay's last fence must be for its fences to count as a problem. */
  public static final Duration FENCES_RECENT = Duration.ofMinutes(15);

  /** Most idle buckets listed. */
  public static final int MAX_IDLE_BUCKETS = 100;

  /** Most rows of the default partition counted, so that the count stays cheap. */
  public static final int DEFAULT_PARTITION_COUNT_LIMIT = 100_000;

  /**
   * A partitioned outbox.
   *
   * @param partitions range partitions, the default one not counted
   * @param ahead range partitions no position has been handed out for yet
   * @param rowsInDefault rows in the default partition, at most {@link #DEFAULT_PARTITION_COUNT_LIMIT}:
   *     rows written where no range partition was ready, which says the janitor is not keeping up
   */
  public record OutboxPartitions(int partitions, int ahead, long rowsInDefault) {}

  /**
   * One subscription.
   *
   * @param pending events not relayed yet; at most the count limit per bucket when {@code capped}
   * @param oldestPendingAge how long the oldest of them has waited; zero when none
   * @param unownedBuckets buckets no relay holds a lease on
   */
  public record Subscription(String name, long pending, boolean capped, Duration oldestPendingAge,
      List<RelayInstance> relays, int buckets, int unownedBuckets) {}

  /** A relay instance and the buckets it holds, with the lease that ends last. */
  public record RelayInstance(String instance, int buckets, Instant leaseUntil) {}

  /** A bucket whose lease is held while its next event waits; see {@link #NOT_MOVING_AFTER}. */
  public record IdleBucket(String subscription, int bucket, String owner, Instant checkpointSavedAt) {}

  /**
   * A relay instance the broker fenced: another relay took its buckets over while it still worked
   * them, so its round was refused (a pause longer than its lease, such as a GC or a frozen VM, or
   * a network that cut it off from the database).
   *
   * @param fences how often, since the instance started
   * @param lastFencedAt when last, by the database's clock
   */
  public record FencedRelay(String subscription, String instance, int fences, Instant lastFencedAt) {

    /** Fenced at least {@link #FENCED_REPEATEDLY} times, the last within {@link #FENCES_RECENT} of {@code now}. */
    public boolean repeatedly(Instant now) {
      return fences >= FENCED_REPEATEDLY && lastFencedAt != null
          && lastFencedAt.isAfter(now.minus(FENCES_RECENT));
    }
  }

  /** A bucket retrying its next event. */
  public record StalledBucket(String subscription, int bucket, String owner, int attempts, Instant nextAttemptAt,
      String lastError) {}

  /**
   * A subscription's dead letters.
   *
   * @param newestError why the newest of them was dead-lettered, such as the topic and size limit
   *     that refused it
   */
  public record OutboxDeadLetters(String subscription, long count, Instant newest, String newestError) {}

  /** Events written to the log in the minute that starts at {@code start}. */
  public record Minute(Instant start, long events) {}

  /** A consumer's dead messages, and those parked behind them, over how many keys. */
  public record InboxDeadLetters(String consumer, long dead, long parked, long keys) {}

  /**
   * Why delivery is not healthy, one sentence each; empty when it is: events waiting and no relay
   * ever started, a subscription with events pending and no relay, one whose oldest pending event
   * waited longer than {@code maxPendingAge}, a bucket retrying a failed event, rows in a
   * partitioned outbox's default partition, a relay fenced {@link #FENCED_REPEATEDLY} or more times
   * with the last one recent.
   */
  public List<String> problems(Duration maxPendingAge) {
    List<String> problems = new java.util.ArrayList<>();
    waitingForFirstRelay.filter(b -> b.pending() > 0).ifPresent(b -> problems.add(b.pending()
        + (b.capped() ? "+" : "") + " events wait in the outbox and no relay has ever started on these tables"
        + " (no subscription yet): start txbox relay, or a relay in the application"));
    for (Subscription s : subscriptions) {
      String pending = s.pending() + (s.capped() ? "+" : "");
      if (s.pending() > 0 && s.relays().isEmpty()) {
        problems.add("subscription " + s.name() + ": " + pending + " events pending and no relay holds a lease");
      }
      if (s.oldestPendingAge().compareTo(maxPendingAge) > 0) {
        problems.add("subscription " + s.name() + ": the oldest pending event has waited " + s.oldestPendingAge()
            + ", more than the limit of " + maxPendingAge);
      }
    }
    if (!stalledBuckets.isEmpty()) {
      problems.add(stalledBuckets.size() + " bucket(s) retrying a failed event");
    }
    // The relay is not named here: a readiness probe shows these sentences to whoever asks, and
    // a generated instance id holds the host name and pid. txbox status lists each bucket's relay.
    idleBuckets.stream().collect(Collectors.groupingBy(IdleBucket::subscription, TreeMap::new,
            Collectors.mapping(b -> String.valueOf(b.bucket()), Collectors.joining(", "))))
        .forEach((subscription, buckets) -> problems.add("subscription " + subscription + ": bucket(s) " + buckets
            + " have had events waiting for over " + NOT_MOVING_AFTER.toSeconds() + " s while the relay that renews"
            + " their leases moves nothing and reports no failure: restart that relay (txbox status names it)"));
    Instant now = Instant.now();
    fencedRelays.stream().filter(r -> r.repeatedly(now)).collect(Collectors.groupingBy(FencedRelay::subscription,
            TreeMap::new, Collectors.counting()))
        .forEach((subscription, relays) -> problems.add("subscription " + subscription + ": " + relays
            + " relay(s) fenced " + FENCED_REPEATEDLY + " or more times, the last within "
            + FENCES_RECENT.toMinutes() + " minutes: each lost its buckets while it worked them, which holds"
            + " read_committed consumers back for up to a lease each time; look for GC or CPU pauses longer than"
            + " the lease, or a network that cuts the relay off (txbox status names it; docs/runbook.md)"));
    outboxPartitions.filter(p -> p.rowsInDefault() > 0).ifPresent(p -> problems.add(p.rowsInDefault()
        + (p.rowsInDefault() >= DEFAULT_PARTITION_COUNT_LIMIT ? "+" : "") + " rows in the outbox's default"
        + " partition: no partition was ready for them, so the janitor is not running or not keeping up"
        + " (they are relayed and deleted as usual)"));
    return problems;
  }
}
