package io.txbox.spi.support;

import io.txbox.RetryPolicy;
import io.txbox.spi.PublishResult;
import java.util.Objects;

/**
 * The one rule by which every relay (the polling relay and the logical relay alike) counts a
 * failed publish toward its {@link RetryPolicy}'s attempts, and decides between retrying and
 * dead-lettering. Two copies of this rule disagreed once, and the logical relay dead-lettered
 * events during a broker outage; so both call this one.
 *
 * <p>A failure counts as an attempt only when the broker acknowledged something else in the same
 * publish: when nothing got through, the broker is down or unreachable, and an outage is no
 * reason to give up on an event. Errors the policy calls permanent dead-letter at once, outage or
 * not, since no retry can fix them.
 *
 * <pre>{@code
 * RetryBudget budget = new RetryBudget(policy);
 * RetryBudget.Verdict v = budget.afterFailure(error, attemptsSoFar, result);
 * if (v.deadLetter()) deadLetter(event, v.attempts(), v.error());
 * else retryLater(event, v.attempts(), policy.delayAfter(backoffLevel, random));
 * }</pre>
 */
public final class RetryBudget {
  /** Longest error text kept with a dead letter or a retrying bucket. */
  public static final int MAX_ERROR_LENGTH = 2000;

  private final RetryPolicy policy;

  /** The budget {@code policy} gives each event. */
  public RetryBudget(RetryPolicy policy) {
    this.policy = Objects.requireNonNull(policy, "retryPolicy must not be null");
  }

  /**
   * What a failed publish means for one event.
   *
   * @param deadLetter whether the event goes to the dead letters now
   * @param attempts the attempts counted so far, this one included when it counts (at least 1
   *     when dead-lettered)
   * @param error the error as kept with the event, see {@link #describe}
   */
  public record Verdict(boolean deadLetter, int attempts, String error) {}

  /**
   * Settles one event whose publish failed with {@code error}.
   *
   * @param attemptsSoFar the attempts counted before this one
   * @param batch the answer to the whole publish the event was part of
   */
  public Verdict afterFailure(Exception error, int attemptsSoFar, PublishResult batch) {
    int attempts = counts(batch) ? attemptsSoFar + 1 : attemptsSoFar;
    boolean deadLetter = policy.givesUp(error, attempts);
    return new Verdict(deadLetter, deadLetter ? Math.max(1, attempts) : attempts, describe(error));
  }

  /** Whether the failures of {@code batch} count as attempts: the broker acknowledged something. */
  public static boolean counts(PublishResult batch) {
    return batch.acknowledged() > 0;
  }

  /**
   * An error as kept with a dead letter or a retrying bucket: its type, its message, its cause's
   * and, when deeper, its root cause's, at most {@value #MAX_ERROR_LENGTH} characters. The root
   * often says what is wrong where the wrappers do not: Kafka's {@code Failed to construct kafka
   * producer} is a keystore that cannot be read.
   */
  public static String describe(Throwable error) {
    String text = error.getClass().getName() + ": " + error.getMessage();
    Throwable cause = error.getCause();
    if (cause != null && cause != error) {
      text += " (caused by " + cause.getClass().getName() + ": " + cause.getMessage() + ")";
      Throwable root = cause;
      for (int depth = 0; depth < 20 && root.getCause() != null && root.getCause() != root; depth++) {
        root = root.getCause();
      }
      if (root != cause) {
        text += " (root cause " + root.getClass().getName() + ": " + root.getMessage() + ")";
      }
    }
    return text.length() > MAX_ERROR_LENGTH ? text.substring(0, MAX_ERROR_LENGTH) : text;
  }
}
