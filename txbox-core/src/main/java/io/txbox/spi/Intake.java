package io.txbox.spi;

import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.InboxQueue;
import io.txbox.Message;
import java.util.Objects;

/**
 * Where a {@link Subscriber} hands each message it received, before it acknowledges it to the
 * broker: an {@link Inbox} with a handler (processed now) or an {@link InboxQueue} (stored now,
 * processed by the queue's workers). Either takes the message in a transaction of its own and
 * returns only after the commit.
 *
 * <pre>{@code
 * Intake intake = Intake.inbox(inbox, "inventory", handler);
 * if (intake.take(message)) processed++; else duplicates++;
 * broker.acknowledge(delivery);   // after take returned, either way
 * }</pre>
 */
public interface Intake {

  /** The consumer the messages are taken for. */
  String consumer();

  /**
   * Takes {@code message} in a transaction of its own: true when it was new, false when the
   * consumer had it already (a redelivery, acknowledged all the same).
   *
   * @throws UnreadableMessageException when no retry can take it (skip or reject it)
   * @throws Exception when it failed and may succeed on a retry
   */
  boolean take(Message message) throws Exception;

  /** Messages processed at once by {@code handler}, deduplicated in {@code inbox}. */
  static Intake inbox(Inbox inbox, String consumer, InboxHandler handler) {
    Objects.requireNonNull(inbox, "inbox must not be null");
    Objects.requireNonNull(handler, "handler must not be null");
    return new Intake() {
      @Override
      public String consumer() {
        return consumer;
      }

      @Override
      public boolean take(Message message) throws Exception {
        return inbox.receive(consumer, message, handler) == Inbox.Receipt.PROCESSED;
      }
    };
  }

  /** Messages stored in {@code queue} and processed by its workers; the consumer is the queue's. */
  static Intake queue(InboxQueue queue) {
    Objects.requireNonNull(queue, "queue must not be null");
    return new Intake() {
      @Override
      public String consumer() {
        return queue.consumer();
      }

      @Override
      public boolean take(Message message) throws Exception {
        try {
          return queue.enqueue(message) == InboxQueue.Enqueued.QUEUED;
        } catch (IllegalArgumentException e) {
          throw new UnreadableMessageException(e); // a malformed txbox-sequence header
        }
      }
    };
  }
}
