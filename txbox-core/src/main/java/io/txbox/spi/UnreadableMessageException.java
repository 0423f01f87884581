package io.txbox.spi;

/**
 * A received message that no retry can make readable, such as one with a malformed txbox header.
 * A subscriber logs it and skips it (Kafka), terminates it (NATS) or rejects it to the queue's
 * dead-letter exchange (RabbitMQ), so that it does not hold back every later message.
 *
 * <pre>{@code
 * } catch (UnreadableMessageException e) {
 *   rejected++;
 *   channel.basicReject(tag, false);
 * }
 * }</pre>
 */
public class UnreadableMessageException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The message was unreadable for the reason {@code cause} gives. */
  public UnreadableMessageException(IllegalArgumentException cause) {
    super(cause.getMessage(), cause);
  }
}
