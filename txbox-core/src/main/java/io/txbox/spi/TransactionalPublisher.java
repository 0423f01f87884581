package io.txbox.spi;

import io.txbox.Message;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * A {@link Publisher} that can publish exactly once, for {@link io.txbox.Delivery#EXACTLY_ONCE}: the
 * records of a round and the relay's progress (each bucket's checkpoint) become visible together
 * in one broker transaction, or not at all, and the broker fences a relay that lost its buckets.
 *
 * <p>The relay drives it in this order. Before it publishes a bucket it claimed, {@link #takeOver}
 * fences the bucket's previous owner at the broker and reads back the checkpoint the broker holds
 * for the bucket, which the relay reads on from when it is later than its store's. Each round,
 * {@link #publish} sends a batch inside a transaction (opened if none is) and waits for every
 * send's answer; then {@link #commit} makes the batch visible with the new checkpoints, or
 * {@link #abort} drops it. After a commit whose outcome is unknown (it threw), the relay reads the
 * checkpoints back again before it publishes those buckets.
 *
 * <pre>{@code
 * TransactionalPublisher kafka = KafkaExactlyOncePublisher.builder().bootstrapServers("kafka:9092").build();
 * kafka.start("orders", member, 64, store.outboxId().orElse(null));
 * Map<Integer, Checkpoint> held = kafka.takeOver(Map.of(3, "relay-a/1f0e"), List.of(member));
 * PublishResult sent = kafka.publish(batch);
 * if (sent.failures().isEmpty()) kafka.commit(Map.of(3, last)); else kafka.abort();
 * }</pre>
 */
public interface TransactionalPublisher extends Publisher {

  /**
   * Prepares the publisher for relay {@code member} of {@code subscription}, whose log has
   * {@code buckets} buckets: its transactional producer and where progress is kept. Called once,
   * before anything else; may throw {@link io.txbox.TxboxException} when the broker refuses.
   *
   * @param outboxId the outbox's own id ({@link RelayStore#outboxId}), kept with each checkpoint so
   *     that {@link #takeOver} refuses another outbox's progress; null when the store keeps none
   */
  void start(String subscription, String member, int buckets, String outboxId);

  /**
   * Makes this relay the only one that can publish the given buckets: fences at the broker each
   * previous owner named (a zombie's open transaction is aborted, its later sends refused), and
   * may fence any other member of the subscription that is not live (one that died before it could
   * fence its own predecessor), then reads back the last committed checkpoint of every given
   * bucket. The relay calls it again, with no owners named, to read the checkpoints back after a
   * commit whose outcome is unknown.
   *
   * @param previousOwners each bucket taken, with the member that owned it before, or {@code null}
   * @param liveMembers the subscription's members the store last saw alive, this relay included:
   *     never fenced unless named as a previous owner
   * @return the broker's checkpoint of each bucket that has one
   * @throws io.txbox.TxboxException when a bucket's checkpoint was kept by another outbox than the
   *     one {@link #start} named: going on from it would skip or resend events
   */
  Map<Integer, Checkpoint> takeOver(Map<Integer, String> previousOwners, Collection<String> liveMembers);

  /**
   * Sends {@code batch} inside the open transaction (opening one if none is) and waits for each
   * send's answer; nothing is visible to read-committed consumers before {@link #commit}.
   */
  @Override
  PublishResult publish(List<Message> batch);

  /**
   * Commits the open transaction (opening an empty one if none is) with each bucket's new
   * checkpoint. When this throws, the transaction may or may not have committed: the relay reads
   * the checkpoints back ({@link #takeOver}) before publishing those buckets again.
   */
  void commit(Map<Integer, Checkpoint> checkpoints);

  /**
   * {@link #commit(Map)}, with a note kept beside some buckets' checkpoints and given back by
   * {@link #notes()} after the next {@link #takeOver}: what a relay must know of its progress
   * beyond a checkpoint, such as the logical relay's record of the transactions it delivered
   * since its last checkpoint in the database. A publisher that keeps no notes refuses any.
   *
   * @param notes text of at most {@value #MAX_NOTE_CHARS} characters per bucket, each bucket also in
   *     {@code checkpoints}
   */
  default void commit(Map<Integer, Checkpoint> checkpoints, Map<Integer, String> notes) {
    if (!notes.isEmpty()) {
      throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps no notes beside checkpoints");
    }
    commit(checkpoints);
  }

  /** Longest note {@link #commit(Map, Map)} takes. */
  int MAX_NOTE_CHARS = 512 * 1024;

  /**
   * The notes kept beside the checkpoints the last {@link #takeOver} read, by bucket; a bucket
   * whose checkpoint was committed without one has none. Empty for a publisher that keeps none.
   */
  default Map<Integer, String> notes() {
    return Map.of();
  }

  /** Aborts the open transaction, if any; nothing sent in it becomes visible. Never throws. */
  void abort();
}
