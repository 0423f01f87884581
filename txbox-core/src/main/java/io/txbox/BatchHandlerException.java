package io.txbox;

/**
 * A batch handler failed on a batch of messages; which one it failed on is not known. The batch
 * was rolled back: take its messages again one at a time.
 *
 * <pre>{@code
 * try {
 *   inbox.receiveAll("billing", messages, batchHandler);
 * } catch (BatchHandlerException e) {
 *   for (Message m : messages) inbox.receive("billing", m, handler);   // find the one it failed on
 * }
 * }</pre>
 */
public final class BatchHandlerException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The batch handler of {@code consumer} failed on a batch of {@code size} messages with {@code cause}. */
  public BatchHandlerException(String consumer, int size, Throwable cause) {
    super("consumer " + consumer + " failed on a batch of " + size + " messages: " + cause.getMessage(), cause);
  }

  /** As {@link HandlerException#of}: an {@link Error} of the JVM itself is thrown as it is. */
  static BatchHandlerException of(String consumer, int size, Throwable failure) {
    if (failure instanceof VirtualMachineError && !(failure instanceof StackOverflowError)) {
      throw (VirtualMachineError) failure;
    }
    return new BatchHandlerException(consumer, size, failure);
  }
}
