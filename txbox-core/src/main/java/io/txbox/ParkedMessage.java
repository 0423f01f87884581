package io.txbox;

import java.time.Instant;

/**
 * A message a consumer holds back: the one its handler failed on for good ({@link #dead()}),
 * or a later message of the same key, stored behind it so that the key keeps its order.
 *
 * <pre>{@code
 * for (ParkedMessage p : inbox.parked("billing", 100)) {
 *   log.info("{} {} {} attempts: {}", p.queueKey(), p.message().id(), p.attempts(), p.lastError());
 * }
 * inbox.retry("billing", parked.queueKey(), handler);   // after the fix is deployed
 * }</pre>
 *
 * @param message the message as it was received
 * @param queueKey the key it is parked under: its key, or {@code txbox-unkeyed:<id>} when it has none
 * @param dead whether this is the message that failed; {@code false} for one waiting behind it
 * @param attempts how often the handler failed on it; 0 for one waiting behind
 * @param lastError the handler's last error, or {@code null} for one waiting behind
 * @param receivedAt when it was received
 */
public record ParkedMessage(
    Message message, String queueKey, boolean dead, int attempts, String lastError, Instant receivedAt) {}
