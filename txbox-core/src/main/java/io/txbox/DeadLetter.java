package io.txbox;

import io.txbox.spi.Checkpoint;

/**
 * An event a subscription gave up on: its error, how often it was tried, and where it stood in
 * the log. The relay writes one to the dead-letter table and moves its bucket on.
 *
 * <pre>{@code
 * // what a Metrics implementation sees when an event is dead-lettered
 * void deadLettered(DeadLetter letter) {
 *   log.warn("{} gave up on {} at {}: {}", letter.subscription(), letter.bucket(), letter.position(), letter.error());
 * }
 * }</pre>
 *
 * @param subscription the subscription that gave up
 * @param bucket the bucket the event belongs to
 * @param position where the event stands in the log
 * @param message the event, or {@code null} when the row could not be read as one (the error says
 *     which field breaks which rule; the dead-letter table keeps the row as it was written)
 * @param error the last error, with its type
 * @param attempts how many publish attempts failed; 1 for a row that could not be read
 */
public record DeadLetter(
    String subscription, int bucket, Checkpoint position, Message message, String error, int attempts) {}
