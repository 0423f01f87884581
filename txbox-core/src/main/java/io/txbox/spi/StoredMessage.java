package io.txbox.spi;

import io.txbox.Message;

/**
 * A message as read from the outbox log, with where it stands in it.
 *
 * <pre>{@code
 * for (StoredMessage row : store.read("kafka", reads)) {
 *   publish(row.message());
 * }
 * }</pre>
 *
 * @param bucket the bucket, derived from the key
 * @param checkpoint the row's place in the log
 * @param message the event
 */
public record StoredMessage(int bucket, Checkpoint checkpoint, Message message) {}
