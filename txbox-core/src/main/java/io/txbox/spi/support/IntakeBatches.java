package io.txbox.spi.support;

import io.txbox.HandlerException;
import io.txbox.Message;
import io.txbox.spi.Intake;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes a run of received items (records, deliveries) through {@link Intake#takeAll}, up to
 * {@code batchSize} in each transaction, for subscribers.
 *
 * <p>A batch is all or nothing. When a handler fails on one message, the batch is rolled back,
 * the messages before it are taken again as a batch, and the failed message is handed back with
 * its error: the subscriber counts that as the message's first failed attempt, under its retry
 * policy, exactly as if it had been taken alone. Anything else that stops a batch (an unreadable
 * item, the database) hands the rest back to be taken one at a time.
 *
 * <pre>{@code
 * IntakeBatches batches = new IntakeBatches(intake, 100, counters);
 * IntakeBatches.Taken taken = batches.take(records, Records::toMessage, batch -> acknowledge(batch));
 * // then: records from taken.count() on one at a time; taken.failure() is the first one's failed attempt
 * }</pre>
 */
public final class IntakeBatches {
  /** Most messages per batch a subscriber allows. */
  public static final int MAX_BATCH_SIZE = 10_000;
  private static final Logger log = LoggerFactory.getLogger(IntakeBatches.class);

  /**
   * How far {@link #take} got.
   *
   * @param count items from the start that were taken
   * @param failure when not null, the handler's failure on the item at {@code count}, which was
   *     not taken: its failed attempt, for the retry policy; when null, the item at {@code count}
   *     (if any) was not tried
   */
  public record Taken(int count, Throwable failure) {}

  private final Intake intake;
  private final int batchSize;
  private final SubscriberCounters counters;

  /**
   * @param batchSize most messages per transaction; 1 takes none in batches
   */
  public IntakeBatches(Intake intake, int batchSize, SubscriberCounters counters) {
    if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
      throw new IllegalArgumentException("batchSize must be >= 1 and <= " + MAX_BATCH_SIZE + ", was " + batchSize);
    }
    this.intake = intake;
    this.batchSize = batchSize;
    this.counters = counters;
  }

  /**
   * Takes {@code received} from the start in batches, calling {@code taken} with the items of each
   * batch once it committed, for the subscriber to acknowledge them.
   *
   * @param read the item's message; an exception marks it unreadable, for the one-at-a-time path
   * @param <T> what the broker delivered
   */
  public <T> Taken take(List<T> received, Function<T, Message> read, Consumer<List<T>> taken) {
    if (batchSize == 1 || !intake.takesBatches()) {
      return new Taken(0, null);
    }
    int from = 0;
    while (received.size() - from >= 2) { // one alone goes the usual way
      int to = Math.min(received.size(), from + batchSize);
      List<Message> messages = readAll(received.subList(from, to), read);
      if (messages == null) {
        return new Taken(from, null);
      }
      Throwable failure = takeAll(messages);
      if (failure != null) {
        return afterFailure(received, from, messages, failure, taken);
      }
      taken.accept(received.subList(from, to));
      from = to;
    }
    return new Taken(from, null);
  }

  /** The messages before the one whose handler failed go again as a batch; the failed one goes back. */
  private <T> Taken afterFailure(List<T> received, int from, List<Message> messages, Throwable failure,
      Consumer<List<T>> taken) {
    int failed = failure instanceof HandlerException h ? indexOf(messages, h) : -1;
    if (failed < 0) {
      return new Taken(from, null); // not a handler's failure: one at a time, from the start
    }
    if (failed > 0) {
      if (takeAll(messages.subList(0, failed)) != null) {
        return new Taken(from, null); // failed differently this time: one at a time
      }
      taken.accept(received.subList(from, from + failed));
    }
    return new Taken(from + failed, failure);
  }

  private static int indexOf(List<Message> messages, HandlerException failure) {
    for (int i = 0; i < messages.size(); i++) {
      if (messages.get(i).id().equals(failure.messageId())) {
        return i;
      }
    }
    return -1;
  }

  private <T> List<Message> readAll(List<T> items, Function<T, Message> read) {
    List<Message> messages = new ArrayList<>(items.size());
    for (T item : items) {
      try {
        messages.add(read.apply(item));
      } catch (RuntimeException e) {
        return null; // the one-at-a-time path rejects it with its place in the log
      }
    }
    return messages;
  }

  /** Null when the batch committed; else why not, and nothing was taken. */
  private Throwable takeAll(List<Message> messages) {
    try {
      intake.takeAll(messages).forEach(counters::countReceived);
      return null;
    } catch (Exception | Error e) {
      log.debug("consumer {}: a batch of {} messages was rolled back: {}", intake.consumer(), messages.size(),
          e.toString());
      return e;
    }
  }
}
