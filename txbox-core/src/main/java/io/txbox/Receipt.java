package io.txbox;

/**
 * What an {@link Inbox} did with a message ({@link Inbox#receive}), and what an
 * {@link io.txbox.spi.InboxStore} reports when it records one.
 *
 * <pre>{@code
 * Receipt receipt = inbox.receive("billing", message, handler);
 * if (receipt == Receipt.DUPLICATE) { ... }     // the handler did not run
 * }</pre>
 */
public enum Receipt {
  /** The handler ran and its transaction committed. */
  PROCESSED,
  /** The consumer had processed this message before; the handler did not run. */
  DUPLICATE,
  /** An earlier message of its key is dead: stored behind it; the handler did not run. */
  PARKED
}
