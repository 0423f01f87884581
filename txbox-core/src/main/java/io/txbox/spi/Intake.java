package io.txbox.spi;

import io.txbox.HandlerException;
import io.txbox.Inbox;
import io.txbox.InboxBatchHandler;
import io.txbox.InboxHandler;
import io.txbox.InboxQueue;
import io.txbox.Message;
import io.txbox.Receipt;
import io.txbox.spi.support.Retries;
import io.txbox.spi.support.RetryRequests;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Where a {@link Subscriber} hands each message it received, before it acknowledges it to the
 * broker: an {@link Inbox} with a handler (processed now) or an {@link InboxQueue} (stored now,
 * processed by the queue's workers). Either takes the message in a transaction of its own and
 * returns only after the commit; an inbox also takes a batch of them in one transaction
 * ({@link #takeAll}).
 *
 * <pre>{@code
 * Intake intake = Intake.inbox(inbox, "inventory", handler);
 * Receipt receipt = intake.take(message);
 * broker.acknowledge(delivery);   // after take returned, whatever the receipt
 * }</pre>
 *
 * <p>A subscriber that gives up on a message ({@link Retries}) hands it to {@link #deadLetter}
 * and acknowledges it once that returned true.
 */
public interface Intake {

  /** The consumer the messages are taken for. */
  String consumer();

  /**
   * Takes {@code message} in a transaction of its own: {@link Receipt#PROCESSED} when it
   * was new (queued, for a queue), {@link Receipt#DUPLICATE} when the consumer had it
   * already, {@link Receipt#PARKED} when it was stored behind a dead message of its key.
   * The caller acknowledges it in every case.
   *
   * @throws UnreadableMessageException when no retry can take it (skip or reject it)
   * @throws HandlerException when the handler failed; this counts toward giving up on it
   * @throws Exception when something else failed (the database), which is retried without limit
   */
  Receipt take(Message message) throws Exception;

  /**
   * Whether {@link #takeAll} takes several messages in one transaction; when false, subscribers
   * call {@link #take} for each.
   */
  default boolean takesBatches() {
    return false;
  }

  /**
   * Takes {@code messages} in one transaction, all or none, in order ({@link Inbox#receiveAll}).
   * When it throws, nothing was taken: the caller goes on one message at a time with {@link #take},
   * which decides each message's retries. This default takes them one at a time.
   *
   * @return one receipt per message, in order
   */
  default List<Receipt> takeAll(List<Message> messages) throws Exception {
    List<Receipt> receipts = new ArrayList<>(messages.size());
    for (Message m : messages) {
      receipts.add(take(m));
    }
    return receipts;
  }

  /**
   * Keeps {@code message}, which failed {@code attempts} times and last with {@code error}, as
   * dead and parks its key, in a transaction of its own.
   *
   * @return true when it was stored (or was already), so the caller acknowledges it; false when
   *     this intake does not dead-letter, and the caller goes on retrying
   * @throws Exception when storing failed; the caller retries later
   */
  default boolean deadLetter(Message message, Throwable error, int attempts) throws Exception {
    return false;
  }

  /**
   * Retries the parked keys an operator asked to retry ({@link Inbox#requestRetry}); subscribers
   * call it through {@link RetryRequests}. An intake that cannot run handlers here (a queue, whose
   * own workers take the requests) does nothing.
   *
   * @return how many keys were freed
   */
  default int runRetryRequests() throws Exception {
    return 0;
  }

  /** Messages processed at once by {@code handler}, deduplicated in {@code inbox}. */
  static Intake inbox(Inbox inbox, String consumer, InboxHandler handler) {
    Objects.requireNonNull(handler, "handler must not be null");
    return inbox(inbox, consumer, handler, messages -> inbox.receiveAll(consumer, messages, handler));
  }

  /**
   * Messages processed at once by {@code handler}, a batch's new messages in one call,
   * deduplicated in {@code inbox}; one at a time where a batch failed, and for retries.
   */
  static Intake inbox(Inbox inbox, String consumer, InboxBatchHandler handler) {
    Objects.requireNonNull(handler, "handler must not be null");
    return inbox(inbox, consumer, handler.oneAtATime(), messages -> inbox.receiveAll(consumer, messages, handler));
  }

  /** How an inbox intake takes a batch. */
  @FunctionalInterface
  interface BatchReceiver {
    List<Receipt> receiveAll(List<Message> messages) throws Exception;
  }

  private static Intake inbox(Inbox inbox, String consumer, InboxHandler handler, BatchReceiver batches) {
    Objects.requireNonNull(inbox, "inbox must not be null");
    return new Intake() {
      @Override
      public String consumer() {
        return consumer;
      }

      @Override
      public Receipt take(Message message) throws Exception {
        return inbox.receive(consumer, message, handler);
      }

      @Override
      public boolean takesBatches() {
        return true;
      }

      @Override
      public List<Receipt> takeAll(List<Message> messages) throws Exception {
        return batches.receiveAll(messages);
      }

      @Override
      public boolean deadLetter(Message message, Throwable error, int attempts) throws Exception {
        inbox.deadLetter(consumer, message, error, attempts);
        return true; // false from the inbox: it was dead or processed already, nothing to keep
      }

      @Override
      public int runRetryRequests() throws Exception {
        return inbox.runRetryRequests(consumer, handler);
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
      public Receipt take(Message message) throws Exception {
        try {
          return switch (queue.enqueue(message)) {
            case QUEUED -> Receipt.PROCESSED;
            case DUPLICATE -> Receipt.DUPLICATE;
            case PARKED -> Receipt.PARKED;
          };
        } catch (IllegalArgumentException e) {
          throw new UnreadableMessageException(e); // a malformed txbox-sequence header
        }
      }
    };
  }
}
