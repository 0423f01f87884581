package io.txbox;

/**
 * A message that no attempt can process: of an event version this consumer does not know, or
 * with a body that cannot be read. Thrown from a handler, it is dead-lettered at once, whatever
 * the {@link RetryPolicy}, and its key is parked while other keys go on.
 *
 * <pre>{@code
 * if (message.version() > 3) {
 *   throw new UnprocessableMessageException("OrderPlaced version " + message.version() + " is newer than 3");
 * }
 * }</pre>
 */
public class UnprocessableMessageException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public UnprocessableMessageException(String message) {
    super(message);
  }

  public UnprocessableMessageException(String message, Throwable cause) {
    super(message, cause);
  }
}
