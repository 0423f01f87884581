package io.txbox.spi;

import io.txbox.DeadLetter;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The relay's half of an outbox store: the subscriptions' checkpoints and leases, the reads of the
 * log and the dead letters. Each method is its own short transaction, methods that change a
 * bucket do so only while the calling instance owns its lease, and a method throws {@link
 * io.txbox.TxboxException} when the store cannot do its work. {@link io.txbox.Relay} takes one.
 *
 * <pre>{@code
 * RelayStore store = PostgresOutboxStore.builder(dataSource).build().relay();
 * Relay relay = Relay.builder(store, publisher).build().start();
 * }</pre>
 */
public interface RelayStore {

  /**
   * Prepares a subscription: checks the tables exist and creates its bucket rows if missing.
   *
   * @return the number of buckets the log is split into
   */
  int openSubscription(String subscription);

  /**
   * Marks the instance alive until {@code lease} from now and renews the leases of the buckets it
   * owns.
   */
  Membership heartbeat(String subscription, String instance, Duration lease);

  /** Takes up to {@code max} buckets that nobody owns or whose lease has expired. */
  List<BucketState> claimBuckets(String subscription, String instance, int max, Duration lease);

  /** Gives buckets up so that other instances can take them at once. */
  void releaseBuckets(String subscription, String instance, Collection<Integer> buckets);

  /** Removes the instance from the subscription's members and releases all its buckets. */
  void leave(String subscription, String instance);

  /**
   * Reads committed events after each bucket's checkpoint, in {@code (txId, position)} order per
   * bucket, never past a transaction that may still commit before an event already visible.
   */
  List<StoredMessage> read(String subscription, List<BucketRead> reads);

  /**
   * Saves the progress of a round and its dead letters in one transaction, for the buckets the
   * instance still owns.
   *
   * @return the buckets whose lease the instance no longer holds; nothing was saved for them
   */
  Set<Integer> saveProgress(
      String subscription, String instance, List<BucketProgress> progress, List<DeadLetter> deadLetters);

  /**
   * Calls {@code onAppend} soon after events are committed, when the store can tell (PostgreSQL
   * {@code LISTEN/NOTIFY}); the relay polls anyway. Returns a handle that stops listening.
   */
  default AutoCloseable listen(Runnable onAppend) {
    return () -> {};
  }

  /**
   * What {@code subscription} has not relayed yet, counting at most {@code limitPerBucket} events
   * in each bucket so that a huge backlog costs a bounded query. Empty when the store cannot tell.
   */
  default Optional<Backlog> backlog(String subscription, int limitPerBucket) {
    return Optional.empty();
  }

  /** The oldest open transaction that holds the read horizon back, if the store can tell. */
  default Optional<OpenTransaction> oldestOpenTransaction() {
    return Optional.empty();
  }

  /**
   * This outbox's own id, made once when its tables were made (a random UUID): what tells its
   * progress kept at a broker from another outbox's, for {@link io.txbox.Delivery#EXACTLY_ONCE}.
   * Empty when the store keeps none.
   */
  default Optional<String> outboxId() {
    return Optional.empty();
  }

  /**
   * Records that the broker fenced {@code instance}'s round ({@link io.txbox.Delivery#EXACTLY_ONCE}):
   * another relay took its buckets over while it still worked them, as after a pause longer than
   * its lease. Kept on the instance's row, so that an operator's status can name a relay that
   * keeps losing its buckets. Best effort: a store that cannot keep it does nothing.
   */
  default void recordFence(String subscription, String instance) {}
}
