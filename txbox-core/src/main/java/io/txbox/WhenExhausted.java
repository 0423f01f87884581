package io.txbox;

/**
 * What a subscriber does with a message once its {@link RetryPolicy} gives up on it (its attempts
 * are used up, or the error is permanent).
 *
 * <pre>{@code
 * KafkaSubscriber.builder(inbox, "billing", handler)
 *     .retryPolicy(RetryPolicy.builder().maxAttempts(5).permanentWhen(e -> e instanceof InvalidOrder).build())
 *     .whenExhausted(WhenExhausted.DEAD_LETTER)   // the default
 *     ...
 * }</pre>
 */
public enum WhenExhausted {
  /**
   * The message is stored as dead in the inbox with its error and attempts, and acknowledged.
   * Its key is parked: every later message of the key is stored behind it, in order, until the
   * key is retried ({@link Inbox#retry}) or discarded ({@link Inbox#discard}). Other keys flow.
   */
  DEAD_LETTER,
  /**
   * The message is retried at the policy's longest delay for as long as it fails, holding back
   * what comes after it on its partition or key, until a fixed handler takes it.
   */
  BLOCK
}
