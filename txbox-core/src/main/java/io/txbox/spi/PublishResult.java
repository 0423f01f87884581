package io.txbox.spi;

import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * What became of a batch: the failures, by index in the batch. Every other message was
 * acknowledged by the broker.
 *
 * <pre>{@code
 * PublishResult result = publisher.publish(batch);
 * if (result.failed(3)) log.warn("4th message failed", result.failure(3));
 * }</pre>
 *
 * @param size how many messages the batch had
 * @param failures the error of each failed message, by its index in the batch
 */
public record PublishResult(int size, SortedMap<Integer, Exception> failures) {

  /** Copies the failures. */
  public PublishResult {
    failures = new TreeMap<>(failures);
  }

  /** Every message acknowledged. */
  public static PublishResult allAcknowledged(int size) {
    return new PublishResult(size, new TreeMap<>());
  }

  /** Every message failed with the same error, as when the broker cannot be reached. */
  public static PublishResult allFailed(int size, Exception error) {
    SortedMap<Integer, Exception> failures = new TreeMap<>();
    for (int i = 0; i < size; i++) {
      failures.put(i, error);
    }
    return new PublishResult(size, failures);
  }

  /** A result with the given failures. */
  public static PublishResult of(int size, Map<Integer, Exception> failures) {
    return new PublishResult(size, new TreeMap<>(failures));
  }

  /** Whether the message at {@code index} failed. */
  public boolean failed(int index) {
    return failures.containsKey(index);
  }

  /** The error of the message at {@code index}, or {@code null} if it was acknowledged. */
  public Exception failure(int index) {
    return failures.get(index);
  }

  /** How many messages the broker acknowledged. */
  public int acknowledged() {
    return size - failures.size();
  }
}
