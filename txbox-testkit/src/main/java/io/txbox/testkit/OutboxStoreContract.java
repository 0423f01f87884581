package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.Membership;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.StoredMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What every {@link OutboxStore} must do for the relay to keep its promises: the specification a
 * new store is written against. A store's test extends this class and says how to make a fresh
 * store and how to append committed messages; JUnit runs every test below against it.
 *
 * <pre>{@code
 * class PostgresOutboxStoreContractTest extends OutboxStoreContract {
 *   protected OutboxStore freshStore() { ... }
 *   protected void appendCommitted(List<Message> messages) { ... }
 * }
 * }</pre>
 *
 * <p>Leases in these tests last {@value #LEASE_MILLIS} ms and run on the store's own clock: a
 * store whose clock a test cannot move is simply waited for.
 */
public abstract class OutboxStoreContract {
  /** How long the tests' leases last. */
  protected static final long LEASE_MILLIS = 1500;
  private static final Duration LEASE = Duration.ofMillis(LEASE_MILLIS);
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String SUBSCRIPTION = "contract";

  private OutboxStore store;
  private int buckets;

  /** A new, empty store, its tables created. */
  protected abstract OutboxStore freshStore() throws Exception;

  /** Appends {@code messages} to the store in one transaction, and commits it. */
  protected abstract void appendCommitted(List<Message> messages) throws Exception;

  @BeforeEach
  void openStore() throws Exception {
    store = freshStore();
    buckets = store.openSubscription(SUBSCRIPTION);
  }

  /** The store under test, as {@link #freshStore()} made it. */
  protected OutboxStore store() {
    return store;
  }

  @Test
  void eachBucketReturnsItsEventsInTheOrderTheyWereAppendedAfterTheCheckpoint() throws Exception {
    List<Message> sent = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      sent.add(message("key-" + (i % 3), "m" + i));
    }
    appendCommitted(sent.subList(0, 10));
    appendCommitted(sent.subList(10, 30));

    List<StoredMessage> all = readAll(30);
    assertThat(all).extracting(m -> m.message().id())
        .containsExactlyInAnyOrderElementsOf(sent.stream().map(Message::id).toList());
    for (String key : List.of("key-0", "key-1", "key-2")) {
      List<String> bodies = all.stream().filter(m -> key.equals(m.message().key()))
          .map(m -> body(m.message())).toList();
      assertThat(bodies).as("one key, one bucket, in order")
          .isEqualTo(sent.stream().filter(m -> key.equals(m.key())).map(OutboxStoreContract::body).toList());
      assertThat(all.stream().filter(m -> key.equals(m.message().key())).map(StoredMessage::bucket).distinct())
          .hasSize(1);
    }
    StoredMessage first = all.stream().filter(m -> body(m.message()).equals("m0")).findFirst().orElseThrow();
    List<StoredMessage> after = store.read(SUBSCRIPTION, List.of(new BucketRead(first.bucket(), first.checkpoint(), 100)));
    assertThat(after).extracting(m -> body(m.message())).doesNotContain("m0").contains("m3");
  }

  @Test
  void aReadReturnsAtMostItsLimitPerBucket() throws Exception {
    List<Message> sent = IntStream.range(0, 20).mapToObj(i -> message("one-key", "m" + i)).toList();
    appendCommitted(sent);
    int bucket = readAll(20).get(0).bucket();

    List<StoredMessage> read = store.read(SUBSCRIPTION, List.of(new BucketRead(bucket, Checkpoint.START, 7)));

    assertThat(read).extracting(m -> body(m.message())).containsExactly("m0", "m1", "m2", "m3", "m4", "m5", "m6");
  }

  @Test
  void aBucketIsClaimedByOneInstanceAtATimeUntilItsLeaseRunsOut() {
    List<BucketState> a = store.claimBuckets(SUBSCRIPTION, "a", buckets, LEASE);
    assertThat(a).hasSize(buckets);
    assertThat(store.claimBuckets(SUBSCRIPTION, "b", buckets, LEASE)).as("all held by a").isEmpty();

    await().atMost(WAIT).until(() -> !store.claimBuckets(SUBSCRIPTION, "b", 1, LEASE).isEmpty());
  }

  @Test
  void aHeartbeatRenewsTheInstancesOwnLeasesAndNamesTheLiveInstances() {
    store.heartbeat(SUBSCRIPTION, "a", LEASE);
    store.heartbeat(SUBSCRIPTION, "b", LEASE);
    store.claimBuckets(SUBSCRIPTION, "a", 1, LEASE);

    Membership a = store.heartbeat(SUBSCRIPTION, "a", LEASE);

    assertThat(a.liveInstances()).contains("a", "b");
    assertThat(a.ownedBuckets()).hasSize(1);
    assertThat(store.heartbeat(SUBSCRIPTION, "b", LEASE).ownedBuckets()).isEmpty();
  }

  @Test
  void releasedBucketsAndThoseOfAnInstanceThatLeftCanBeClaimedAtOnce() {
    List<BucketState> claimed = store.claimBuckets(SUBSCRIPTION, "a", 2, LEASE);
    store.releaseBuckets(SUBSCRIPTION, "a", List.of(claimed.get(0).bucket()));
    assertThat(store.claimBuckets(SUBSCRIPTION, "b", buckets, LEASE)).extracting(BucketState::bucket)
        .contains(claimed.get(0).bucket()).doesNotContain(claimed.get(1).bucket());

    store.leave(SUBSCRIPTION, "a");
    assertThat(store.claimBuckets(SUBSCRIPTION, "c", buckets, LEASE)).extracting(BucketState::bucket)
        .containsExactly(claimed.get(1).bucket());
  }

  @Test
  void progressIsSavedOnlyByTheLeaseHolderAndAClaimStartsAtTheSavedCheckpoint() throws Exception {
    appendCommitted(List.of(message("k", "m0"), message("k", "m1")));
    StoredMessage m0 = readAll(2).get(0);
    int bucket = m0.bucket();
    store.claimBuckets(SUBSCRIPTION, "a", buckets, LEASE);

    Set<Integer> lostByB = store.saveProgress(SUBSCRIPTION, "b",
        List.of(new BucketProgress(bucket, m0.checkpoint(), 0, null, null)), List.of());
    assertThat(lostByB).as("b holds no lease").containsExactly(bucket);
    Set<Integer> lostByA = store.saveProgress(SUBSCRIPTION, "a",
        List.of(new BucketProgress(bucket, m0.checkpoint(), 2, null, "broker said no")), List.of());
    assertThat(lostByA).isEmpty();

    store.leave(SUBSCRIPTION, "a");
    BucketState state = store.claimBuckets(SUBSCRIPTION, "b", buckets, LEASE).stream()
        .filter(s -> s.bucket() == bucket).findFirst().orElseThrow();
    assertThat(state.checkpoint()).isEqualTo(m0.checkpoint());
    assertThat(state.attempts()).isEqualTo(2);
    assertThat(store.read(SUBSCRIPTION, List.of(new BucketRead(bucket, state.checkpoint(), 10))))
        .extracting(m -> body(m.message())).containsExactly("m1");
  }

  @Test
  void aLeaseThatRanOutSavesNothing() throws Exception {
    appendCommitted(List.of(message("k", "m0")));
    StoredMessage m0 = readAll(1).get(0);
    store.claimBuckets(SUBSCRIPTION, "a", buckets, LEASE);
    await().atMost(WAIT).until(() -> !store.claimBuckets(SUBSCRIPTION, "b", buckets, LEASE).isEmpty());

    Set<Integer> lost = store.saveProgress(SUBSCRIPTION, "a",
        List.of(new BucketProgress(m0.bucket(), m0.checkpoint(), 0, null, null)),
        List.of(new DeadLetter(SUBSCRIPTION, m0.bucket(), m0.checkpoint(), m0.message(), "e", 1)));

    assertThat(lost).containsExactly(m0.bucket());
    // Read back by the next owner: the checkpoint did not move, so m0 is sent again.
    List<BucketState> next = new ArrayList<>();
    await().atMost(WAIT).until(() -> {
      next.addAll(store.claimBuckets(SUBSCRIPTION, "c", buckets, LEASE));
      return next.stream().anyMatch(s -> s.bucket() == m0.bucket());
    });
    BucketState state = next.stream().filter(s -> s.bucket() == m0.bucket()).findFirst().orElseThrow();
    assertThat(state.checkpoint()).isEqualTo(Checkpoint.START);
  }

  @Test
  void aClaimNamesTheOwnerWhoseLeaseRanOut() throws Exception {
    List<BucketState> first = store.claimBuckets(SUBSCRIPTION, "a", buckets, LEASE);
    assertThat(first).isNotEmpty().allSatisfy(s -> assertThat(s.previousOwner()).isNull());
    List<BucketState> taken = new ArrayList<>();
    await().atMost(WAIT).until(() -> taken.addAll(store.claimBuckets(SUBSCRIPTION, "b", buckets, LEASE)));
    assertThat(taken).allSatisfy(s -> assertThat(s.previousOwner()).isEqualTo("a"));

    store.releaseBuckets(SUBSCRIPTION, "b", taken.stream().map(BucketState::bucket).toList());
    assertThat(store.claimBuckets(SUBSCRIPTION, "c", buckets, LEASE))
        .as("a bucket given back has no previous owner to fence")
        .isNotEmpty().allSatisfy(s -> assertThat(s.previousOwner()).isNull());
  }

  @Test
  void subscriptionsKeepTheirOwnCheckpoints() throws Exception {
    appendCommitted(List.of(message("k", "m0"), message("k", "m1")));
    StoredMessage m0 = readAll(2).get(0);
    store.openSubscription("other");
    store.claimBuckets(SUBSCRIPTION, "a", buckets, LEASE);
    store.saveProgress(SUBSCRIPTION, "a", List.of(new BucketProgress(m0.bucket(), m0.checkpoint(), 0, null, null)),
        List.of());

    BucketState other = store.claimBuckets("other", "a", buckets, LEASE).stream()
        .filter(s -> s.bucket() == m0.bucket()).findFirst().orElseThrow();

    assertThat(other.checkpoint()).isEqualTo(Checkpoint.START);
  }

  /**
   * Every event of every bucket, once {@code expected} of them are readable: a store may hold a
   * committed event back while an older transaction could still commit before it.
   */
  private List<StoredMessage> readAll(int expected) {
    List<BucketRead> reads = new ArrayList<>();
    for (int b = 0; b < buckets; b++) {
      reads.add(new BucketRead(b, Checkpoint.START, 10_000));
    }
    return await().atMost(WAIT).until(() -> store.read(SUBSCRIPTION, reads), all -> all.size() >= expected);
  }

  private static Message message(String key, String body) {
    return Message.builder().id(UUID.randomUUID()).type("ContractEvent").destination("d").key(key)
        .payload(body.getBytes(StandardCharsets.UTF_8)).build();
  }

  private static String body(Message m) {
    return new String(m.payload(), StandardCharsets.UTF_8);
  }
}
