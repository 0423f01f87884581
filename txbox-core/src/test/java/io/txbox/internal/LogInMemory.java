package io.txbox.internal;

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
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An outbox store in memory for the relay's unit tests, with leases on a settable clock in
 * milliseconds: just enough of the store's contract to drive the loop round by round.
 */
final class LogInMemory implements OutboxStore {
  final AtomicLong nowMillis = new AtomicLong(1_000_000);
  final List<DeadLetter> deadLetters = new ArrayList<>();
  private final int bucketCount;
  private final List<StoredMessage> log = new ArrayList<>();
  private final TreeMap<Integer, Row> rows = new TreeMap<>();
  private volatile RuntimeException readFailure;
  private long position;

  private static final class Row {
    Checkpoint checkpoint = Checkpoint.START;
    String owner;
    long leaseUntil;
    int attempts;
  }

  LogInMemory(int bucketCount) {
    this.bucketCount = bucketCount;
    for (int b = 0; b < bucketCount; b++) {
      rows.put(b, new Row());
    }
  }

  synchronized Checkpoint add(int bucket, Message message) {
    Checkpoint at = new Checkpoint(++position, position);
    log.add(new StoredMessage(bucket, at, message));
    return at;
  }

  synchronized void addUnreadable(int bucket, String reason) {
    log.add(StoredMessage.unreadable(bucket, new Checkpoint(++position, position), reason));
  }

  synchronized Checkpoint checkpoint(int bucket) {
    return rows.get(bucket).checkpoint;
  }

  synchronized String owner(int bucket) {
    Row row = rows.get(bucket);
    return row.leaseUntil > nowMillis.get() ? row.owner : null;
  }

  @Override
  public void append(Connection transaction, List<Message> messages) {
    throw new UnsupportedOperationException("tests add events with add()");
  }

  @Override
  public int openSubscription(String subscription) {
    return bucketCount;
  }

  @Override
  public synchronized Membership heartbeat(String subscription, String instance, Duration lease) {
    Set<Integer> owned = new HashSet<>();
    rows.forEach((bucket, row) -> {
      if (instance.equals(row.owner) && row.leaseUntil > nowMillis.get()) {
        row.leaseUntil = nowMillis.get() + lease.toMillis();
        owned.add(bucket);
      }
    });
    return new Membership(List.of(instance), owned);
  }

  @Override
  public synchronized List<BucketState> claimBuckets(String subscription, String instance, int max, Duration lease) {
    List<BucketState> claimed = new ArrayList<>();
    for (var e : rows.entrySet()) {
      Row row = e.getValue();
      if (claimed.size() < max && (row.owner == null || row.leaseUntil <= nowMillis.get())) {
        row.owner = instance;
        row.leaseUntil = nowMillis.get() + lease.toMillis();
        claimed.add(new BucketState(e.getKey(), row.checkpoint, row.attempts, null));
      }
    }
    return claimed;
  }

  @Override
  public synchronized void releaseBuckets(String subscription, String instance, Collection<Integer> buckets) {
    buckets.forEach(b -> {
      Row row = rows.get(b);
      if (instance.equals(row.owner)) {
        row.owner = null;
      }
    });
  }

  @Override
  public synchronized void leave(String subscription, String instance) {
    releaseBuckets(subscription, instance, rows.keySet());
  }

  /** Every read fails with {@code failure} until it is set back to null, as a database that is down. */
  void failReads(RuntimeException failure) {
    readFailure = failure;
  }

  @Override
  public synchronized List<StoredMessage> read(String subscription, List<BucketRead> reads) {
    if (readFailure != null) {
      throw readFailure;
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
    Set<Integer> lost = new TreeSet<>();
    for (BucketProgress p : progress) {
      Row row = rows.get(p.bucket());
      if (!instance.equals(row.owner) || row.leaseUntil <= nowMillis.get()) {
        lost.add(p.bucket());
        continue;
      }
      row.checkpoint = p.checkpoint();
      row.attempts = p.attempts();
    }
    letters.stream().filter(d -> !lost.contains(d.bucket())).forEach(deadLetters::add);
    return lost;
  }
}
