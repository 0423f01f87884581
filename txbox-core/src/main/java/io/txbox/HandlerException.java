package io.txbox;

import java.util.UUID;

/**
 * A handler failed; its transaction was rolled back and nothing was recorded, so the message is
 * processed again when the broker redelivers it. The cause is the handler's own exception.
 *
 * <pre>{@code
 * try {
 *   inbox.receive("inventory", message, handler);
 * } catch (HandlerException e) {
 *   // do not acknowledge: the broker delivers the message again
 * }
 * }</pre>
 */
public final class HandlerException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final UUID messageId;

  /** The handler of {@code consumer} failed on {@code message} with {@code cause}. */
  public HandlerException(String consumer, Message message, Throwable cause) {
    super("consumer " + consumer + " failed on message " + message.id() + " (" + message.type() + "): "
        + cause.getMessage(), cause);
    this.messageId = message.id();
  }

  /**
   * The handler's failure on {@code message} as a {@code HandlerException}; an {@link Error} of
   * the JVM itself (out of memory, but not a stack overflow, which a message can cause) is
   * thrown as it is, since it says nothing about the message.
   */
  public static HandlerException of(String consumer, Message message, Throwable failure) {
    if (failure instanceof VirtualMachineError && !(failure instanceof StackOverflowError)) {
      throw (VirtualMachineError) failure;
    }
    return new HandlerException(consumer, message, failure);
  }

  /** The message the handler failed on. */
  public UUID messageId() {
    return messageId;
  }
}
