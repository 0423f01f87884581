package io.txbox.spi;

import io.txbox.DeadLetter;
import io.txbox.Message;
import java.util.List;

/**
 * Receives what the relay does, for meters and logs. Every method has an empty default and is
 * called on the relay's own thread, so implementations must be quick and must not throw.
 *
 * <pre>{@code
 * Relay relay = Relay.builder(store, publisher)
 *     .metrics(new Metrics() {
 *       public void published(String subscription, List<Message> acknowledged) {
 *         counter.increment(acknowledged.size());
 *       }
 *     })
 *     .build();
 * }</pre>
 */
public interface Metrics {

  /** Metrics that record nothing. */
  Metrics NONE = new Metrics() {};

  /** The broker acknowledged these messages and their checkpoint is saved. */
  default void published(String subscription, List<Message> acknowledged) {}

  /** A message failed and its bucket will retry it. */
  default void retrying(String subscription, Message message, int attempts, Throwable error) {}

  /** A message was dead-lettered. */
  default void deadLettered(DeadLetter letter) {}

  /** The relay now owns this many buckets of the subscription. */
  default void bucketsOwned(String subscription, int buckets) {}

  /** What became of one round's broker transaction, under exactly-once delivery. */
  enum TransactionOutcome {
    /** Committed: its records and checkpoints are visible. */
    COMMITTED,
    /** Aborted by the relay: an event failed, or a lease ran out; its events are sent again. */
    ABORTED,
    /** Refused by the broker because another relay took the buckets over; nothing of it is visible. */
    FENCED,
    /** The commit failed and may or may not have happened; the checkpoints are read back from the broker. */
    UNKNOWN
  }

  /** A round's broker transaction ended so, under exactly-once delivery. */
  default void transaction(String subscription, TransactionOutcome outcome) {}
}
