package io.txbox.spi;

import io.txbox.Message;
import java.util.Objects;

/**
 * A row as read from the outbox log, with where it stands in it: either a {@link Message}, or,
 * for a row that breaks the message rules (written with plain SQL, say), why it cannot be one.
 * The relay dead-letters an unreadable row on its own and goes on with the rest.
 *
 * <pre>{@code
 * for (StoredMessage row : store.read("kafka", reads)) {
 *   if (row.isReadable()) {
 *     publish(row.message());
 *   }
 * }
 * }</pre>
 *
 * @param bucket the bucket, derived from the key
 * @param checkpoint the row's place in the log
 * @param message the event, or {@code null} when the row is unreadable
 * @param unreadable why the row is not a valid message, naming the field; {@code null} when it is
 */
public record StoredMessage(int bucket, Checkpoint checkpoint, Message message, String unreadable) {

  /** Checks that exactly one of {@code message} and {@code unreadable} is given. */
  public StoredMessage {
    Objects.requireNonNull(checkpoint, "checkpoint must not be null");
    if ((message == null) == (unreadable == null)) {
      throw new IllegalArgumentException("exactly one of message and unreadable must be given");
    }
  }

  /** A readable row. */
  public StoredMessage(int bucket, Checkpoint checkpoint, Message message) {
    this(bucket, checkpoint, Objects.requireNonNull(message, "message must not be null"), null);
  }

  /** A row that cannot be turned into a {@link Message}, and why. */
  public static StoredMessage unreadable(int bucket, Checkpoint checkpoint, String reason) {
    return new StoredMessage(bucket, checkpoint, null, Objects.requireNonNull(reason, "reason must not be null"));
  }

  /** Whether the row is a valid message. */
  public boolean isReadable() {
    return message != null;
  }
}
