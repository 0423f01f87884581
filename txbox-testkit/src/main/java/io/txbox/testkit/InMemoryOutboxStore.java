package io.txbox.testkit;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.Membership;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.StoredMessage;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * An {@link OutboxStore} in memory, for testing a relay, a publisher or an application without a
 * database, in milliseconds. It keeps the store's contract ({@link OutboxStoreContract} proves it):
 * each bucket's events in the order they were added, leases that run out on its clock, progress
 * saved only by the instance that holds the bucket's lease. Give it a clock you can move to make
 * leases run out on purpose.
 *
 * <pre>{@code
 * SettableClock clock = new SettableClock(Instant.now());
 * InMemoryOutboxStore store = new InMemoryOutboxStore(4, clock);
 * store.append(null, List.of(message));             // visible at once, as if committed
 * Relay relay = Relay.builder(store, publisher).build().start();
 * }</pre>
 *
 * <p>{@link #append} ignores the connection: what is sent is visible at once, as if committed. A
 * message's bucket is its key's hash (its id's, without a key) modulo the bucket count. Thread-safe.
 */
public final class InMemoryOutboxStore implements OutboxStore {
  private final int bucketCount;
  private final Clock clock;
  private final List<StoredMessage> log = new ArrayList<>();
  private final Map<String, Subscription> subscriptions = new HashMap<>();
  private final List<DeadLetter> deadLetters = new ArrayList<>();
  private volatile RuntimeException readFailure;
  private long position;

  /** A store of {@code buckets} buckets whose leases run on the system clock. */
  public InMemoryOutboxStore(int buckets) {
    this(buckets, Clock.systemUTC());
  }

  /** A store of {@code buckets} buckets whose leases run on {@code clock}. */
  public InMemoryOutboxStore(int buckets, Clock clock) {
    if (buckets < 1 || buckets > 1024) {
      throw new IllegalArgumentException("buckets must be between 1 and 1024, was " + buckets);
    }
    this.bucketCount = buckets;
    this.clock = clock;
  }

  /** One subscription's buckets and the instances that beat for it. */
  private final class Subscription {
    final TreeMap<Integer, Row> rows = new TreeMap<>();
    final Map<String, Instant> instancesUntil = new HashMap<>();

    Subscription() {
      for (int b = 0; b < bucketCount; b++) {
        rows.put(b, new Row());
      }
    }
  }

  private static final class Row {
    Checkpoint checkpoint = Checkpoint.START;
    String owner;
    Instant leaseUntil = Instant.MIN;
    int attempts;
    Instant nextAttemptAt;

    boolean heldBy(String instance, Instant now) {
      return instance.equals(owner) && leaseUntil.isAfter(now);
    }
  }

  /** Adds {@code message} to {@code bucket}, as committed; returns its place in the log. */
  public synchronized Checkpoint add(int bucket, Message message) {
    Checkpoint at = new Checkpoint(++position, position);
    log.add(new StoredMessage(checkBucket(bucket), at, message));
    return at;
  }

  /** Adds a row no message can be made of, as a plain-SQL writer might leave, with the reason. */
  public synchronized Checkpoint addUnreadable(int bucket, String reason) {
    Checkpoint at = new Checkpoint(++position, position);
    log.add(StoredMessage.unreadable(checkBucket(bucket), at, reason));
    return at;
  }

  /** The bucket {@code message} goes to. */
  public int bucketOf(Message message) {
    String key = message.key() != null ? message.key() : message.id().toString();
    return Math.floorMod(key.hashCode(), bucketCount);
  }

  /** Where {@code subscription} stands in {@code bucket}. */
  public synchronized Checkpoint checkpoint(String subscription, int bucket) {
    return subscription(subscription).rows.get(checkBucket(bucket)).checkpoint;
  }

  /** The instance holding {@code bucket} of {@code subscription} now, or null. */
  public synchronized String owner(String subscription, int bucket) {
    Row row = subscription(subscription).rows.get(checkBucket(bucket));
    return row.owner != null && row.heldBy(row.owner, clock.instant()) ? row.owner : null;
  }

  /** The dead letters saved so far, oldest first. */
  public synchronized List<DeadLetter> deadLetters() {
    return List.copyOf(deadLetters);
  }

  /** Every read fails with {@code failure} until it is set back to null, as a database that is down. */
  public void failReads(RuntimeException failure) {
    readFailure = failure;
  }

  @Override
  public synchronized void append(Connection transaction, List<Message> messages) {
    messages.forEach(m -> add(bucketOf(m), m));
  }

  @Override
  public synchronized int openSubscription(String subscription) {
    subscription(subscription);
    return bucketCount;
  }

  @Override
  public synchronized Membership heartbeat(String subscription, String instance, Duration lease) {
    Subscription s = subscription(subscription);
    Instant now = clock.instant();
    s.instancesUntil.put(instance, now.plus(lease));
    s.instancesUntil.values().removeIf(until -> !until.isAfter(now));
    Set<Integer> owned = new TreeSet<>();
    s.rows.forEach((bucket, row) -> {
      if (row.heldBy(instance, now)) {
        row.leaseUntil = now.plus(lease);
        owned.add(bucket);
      }
    });
    return new Membership(new ArrayList<>(new TreeSet<>(s.instancesUntil.keySet())), owned);
  }

  @Override
  public synchronized List<BucketState> claimBuckets(String subscription, String instance, int max, Duration lease) {
    Instant now = clock.instant();
    List<BucketState> claimed = new ArrayList<>();
    for (var e : subscription(subscription).rows.entrySet()) {
      Row row = e.getValue();
      if (claimed.size() < max && (row.owner == null || !row.leaseUntil.isAfter(now))) {
        String previous = row.owner;
        row.owner = instance;
        row.leaseUntil = now.plus(lease);
        claimed.add(new BucketState(e.getKey(), row.checkpoint, row.attempts, row.nextAttemptAt, previous));
      }
    }
    return claimed;
  }

  @Override
  public synchronized void releaseBuckets(String subscription, String instance, Collection<Integer> buckets) {
    Subscription s = subscription(subscription);
    buckets.forEach(b -> {
      Row row = s.rows.get(b);
      if (row != null && instance.equals(row.owner)) {
        row.owner = null;
      }
    });
  }

  @Override
  public synchronized void leave(String subscription, String instance) {
    Subscription s = subscription(subscription);
    releaseBuckets(subscription, instance, s.rows.keySet());
    s.instancesUntil.remove(instance);
  }

  @Override
  public synchronized List<StoredMessage> read(String subscription, List<BucketRead> reads) {
    RuntimeException failure = readFailure;
    if (failure != null) {
      throw failure;
    }
    List<StoredMessage> found = new ArrayList<>();
    for (BucketRead r : reads) {
      log.stream()
          .filter(m -> m.bucket() == r.bucket() && m.checkpoint().compareTo(r.after()) > 0)
          .limit(r.limit())
          .forEach(found::add);
    }
    return found;
  }

  @Override
  public synchronized Set<Integer> saveProgress(
      String subscription, String instance, List<BucketProgress> progress, List<DeadLetter> letters) {
    Subscription s = subscription(subscription);
    Instant now = clock.instant();
    Set<Integer> lost = new TreeSet<>();
    for (BucketProgress p : progress) {
      Row row = s.rows.get(p.bucket());
      if (row == null || !row.heldBy(instance, now)) {
        lost.add(p.bucket());
        continue;
      }
      row.checkpoint = p.checkpoint();
      row.attempts = p.attempts();
      row.nextAttemptAt = p.nextAttemptAt();
    }
    letters.stream().filter(d -> !lost.contains(d.bucket())).forEach(deadLetters::add);
    return lost;
  }

  private Subscription subscription(String name) {
    return subscriptions.computeIfAbsent(name, n -> new Subscription());
  }

  private int checkBucket(int bucket) {
    if (bucket < 0 || bucket >= bucketCount) {
      throw new IllegalArgumentException("bucket must be between 0 and " + (bucketCount - 1) + ", was " + bucket);
    }
    return bucket;
  }
}
