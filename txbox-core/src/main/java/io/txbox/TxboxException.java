package io.txbox;

/**
 * Thrown when txbox cannot do its work: a store that cannot be reached, a table that does not
 * exist, a setting that does not fit the database. The message says what to fix.
 *
 * <pre>{@code
 * try {
 *   relay.start();
 * } catch (TxboxException e) {
 *   log.error("relay not started: {}", e.getMessage());
 * }
 * }</pre>
 */
public class TxboxException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** An error with a message that says what to fix. */
  public TxboxException(String message) {
    super(message);
  }

  /** An error with a message that says what to fix, and its cause. */
  public TxboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
