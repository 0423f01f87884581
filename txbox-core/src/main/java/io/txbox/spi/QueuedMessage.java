package io.txbox.spi;

import io.txbox.Message;

/**
 * A message an {@link InboxQueueStore} handed to a worker.
 *
 * @param message the message as it was received
 * @param queueKey what orders it: its key, or a key of its own when it has none
 * @param sequence its number within the key, or null when it carries none
 * @param lastSequence the highest number processed so far for the key, 0 when none
 * @param failedAttempts how often it failed before
 */
public record QueuedMessage(Message message, String queueKey, Long sequence, long lastSequence, int failedAttempts) {

  /** Whether it comes after a gap that was not filled in time. */
  public boolean afterGap() {
    return sequence != null && sequence > lastSequence + 1;
  }

  /** Whether its key has already moved past it (it came after its gap was given up on). */
  public boolean late() {
    return sequence != null && sequence <= lastSequence;
  }
}
