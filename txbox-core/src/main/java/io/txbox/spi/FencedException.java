package io.txbox.spi;

import io.txbox.TxboxException;

/**
 * Thrown by a {@link TransactionalPublisher} whose broker fenced it: another relay took over its
 * buckets (as when this one was frozen or cut off past its leases), and nothing of the open
 * transaction becomes visible. The relay counts it and reads its buckets' checkpoints back.
 *
 * <pre>{@code
 * } catch (ProducerFencedException e) {
 *   throw new FencedException("another relay took the buckets over", e);
 * }
 * }</pre>
 */
public class FencedException extends TxboxException {
  private static final long serialVersionUID = 1L;

  /** A fence, with what the broker said. */
  public FencedException(String message, Throwable cause) {
    super(message, cause);
  }
}
