package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.Membership;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.StoredMessage;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Two relays in one JVM on the in-memory store, one of them cut off from the store's leases (its
 * heartbeats fail, as in a network partition or a long pause) while it goes on running.
 */
class RelayClusterTest {
  private static final int BUCKETS = 8;
  private final InMemoryOutboxStore store = new InMemoryOutboxStore(BUCKETS);
  private final List<Sent> sent = new ArrayList<>();

  /** A message handed to a publisher: by which relay, when, of which bucket. */
  private record Sent(String relay, long nanos, int bucket, UUID id) {}

  @Test
  void aRelayCutOffFromItsLeasesSendsNothingOfABucketOnceAnotherRelayTookIt() throws Exception {
    AtomicBoolean partitioned = new AtomicBoolean();
    Relay a = relay("a", new Partitionable(store, partitioned));
    Relay b = relay("b", store);
    try {
      a.start();
      addEvents(0, 200);
      await().atMost(Duration.ofSeconds(30)).until(() -> sentBy("a") >= 200);

      partitioned.set(true); // a keeps running, but can no longer renew or claim anything
      b.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> b.ownedBuckets().size() == BUCKETS);
      addEvents(200, 200);
      await().atMost(Duration.ofSeconds(30)).until(() -> deliveredIds().size() == 400);
    } finally {
      a.close();
      b.close();
    }
    Map<Integer, Long> takenByB = firstSendOfEachBucket("b");
    assertThat(takenByB).as("b took every bucket").hasSize(BUCKETS);
    synchronized (sent) {
      for (Sent s : sent) {
        if (s.relay().equals("a") && takenByB.containsKey(s.bucket())) {
          assertThat(s.nanos()).as("a sent %s of bucket %d after b took the bucket", s.id(), s.bucket())
              .isLessThan(takenByB.get(s.bucket()));
        }
      }
    }
  }

  private Relay relay(String instance, OutboxStore relayStore) {
    return Relay.builder(relayStore, new Recording(instance)).instanceId(instance)
        .heartbeatInterval(Duration.ofMillis(50)).leaseDuration(Duration.ofMillis(500))
        .idleInterval(Duration.ofMillis(5)).build();
  }

  private void addEvents(int from, int count) {
    for (int i = from; i < from + count; i++) {
      Message m = Message.builder().type("E").destination("d").key("key-" + (i % 16))
          .payload(Integer.toString(i).getBytes()).build();
      store.add(store.bucketOf(m), m);
    }
  }

  private long sentBy(String relay) {
    synchronized (sent) {
      return sent.stream().filter(s -> s.relay().equals(relay)).count();
    }
  }

  private Set<UUID> deliveredIds() {
    synchronized (sent) {
      return new java.util.HashSet<>(sent.stream().map(Sent::id).toList());
    }
  }

  private Map<Integer, Long> firstSendOfEachBucket(String relay) {
    Map<Integer, Long> first = new HashMap<>();
    synchronized (sent) {
      sent.stream().filter(s -> s.relay().equals(relay)).forEach(s -> first.putIfAbsent(s.bucket(), s.nanos()));
    }
    return first;
  }

  /** Acknowledges everything and notes who sent what, when. */
  private final class Recording implements Publisher {
    private final String relay;

    Recording(String relay) {
      this.relay = relay;
    }

    @Override
    public PublishResult publish(List<Message> batch) {
      long now = System.nanoTime();
      synchronized (sent) {
        batch.forEach(m -> sent.add(new Sent(relay, now, store.bucketOf(m), m.id())));
      }
      return PublishResult.allAcknowledged(batch.size());
    }

    @Override
    public void close() {}
  }

  /** The store as a relay cut off from it sees it: while partitioned, leases cannot be renewed or claimed. */
  private static final class Partitionable implements OutboxStore {
    private final OutboxStore store;
    private final AtomicBoolean partitioned;

    Partitionable(OutboxStore store, AtomicBoolean partitioned) {
      this.store = store;
      this.partitioned = partitioned;
    }

    private void check() {
      if (partitioned.get()) {
        throw new IllegalStateException("cut off from the store");
      }
    }

    @Override
    public void append(Connection transaction, List<Message> messages) throws java.sql.SQLException {
      store.append(transaction, messages);
    }

    @Override
    public int openSubscription(String subscription) {
      return store.openSubscription(subscription);
    }

    @Override
    public Membership heartbeat(String subscription, String instance, Duration lease) {
      check();
      return store.heartbeat(subscription, instance, lease);
    }

    @Override
    public List<BucketState> claimBuckets(String subscription, String instance, int max, Duration lease) {
      check();
      return store.claimBuckets(subscription, instance, max, lease);
    }

    @Override
    public void releaseBuckets(String subscription, String instance, Collection<Integer> buckets) {
      check();
      store.releaseBuckets(subscription, instance, buckets);
    }

    @Override
    public void leave(String subscription, String instance) {
      check();
      store.leave(subscription, instance);
    }

    @Override
    public List<StoredMessage> read(String subscription, List<BucketRead> reads) {
      return store.read(subscription, reads); // reads still work: only the leases are cut off
    }

    @Override
    public Set<Integer> saveProgress(
        String subscription, String instance, List<BucketProgress> progress, List<DeadLetter> letters) {
      return store.saveProgress(subscription, instance, progress, letters);
    }
  }
}
