package io.txbox.spi;

/**
 * A publish failure that retrying cannot fix, such as a message larger than the broker accepts or
 * a destination that does not exist. The default {@link io.txbox.RetryPolicy} dead-letters it at
 * once.
 *
 * <pre>{@code
 * if (e instanceof RecordTooLargeException) {
 *   failures.put(i, new PermanentPublishException("record too large for topic " + topic, e));
 * }
 * }</pre>
 */
public class PermanentPublishException extends Exception {
  private static final long serialVersionUID = 1L;

  /** A permanent failure with a message that says what the broker refused. */
  public PermanentPublishException(String message, Throwable cause) {
    super(message, cause);
  }

  /** A permanent failure with a message that says what the broker refused. */
  public PermanentPublishException(String message) {
    super(message);
  }
}
