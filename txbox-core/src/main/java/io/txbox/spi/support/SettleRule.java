package io.txbox.spi.support;

import io.txbox.RetryPolicy;
import io.txbox.spi.PublishResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.random.RandomGenerator;

/**
 * The one rule by which every relay (the table relay and the logical relay alike) settles the
 * events of one publish from the broker's answer: what was acknowledged is done, what cannot be
 * read or what the {@link RetryPolicy} gives up on is dead-lettered, what failed otherwise is
 * retried after a backoff, and every later event of the same order group (a table relay's bucket,
 * a logical relay's key) is held back, to be sent again after the retried one, so that the group's
 * order holds at the broker. Failures count toward the policy by the rule of {@link RetryBudget}.
 *
 * <p>Two copies of this rule once disagreed, and the logical relay dead-lettered events during a
 * broker outage that the table relay rode out; so both relays call this one.
 *
 * <pre>{@code
 * SettleRule rule = new SettleRule(policy);
 * List<SettleRule.Outcome> outcomes = rule.settle(sentEvents, publisher.publish(messages), random);
 * for (SettleRule.Outcome o : outcomes) {
 *   switch (o.fate()) {
 *     case ACKNOWLEDGED -> done(o);
 *     case DEAD_LETTERED -> deadLetter(o, o.attempts(), o.error());
 *     case RETRY -> retryAfter(o, o.attempts(), o.backoff());
 *     case HELD_BACK -> sendAgainLater(o);
 *   }
 * }
 * }</pre>
 */
public final class SettleRule {
  private final RetryPolicy policy;
  private final RetryBudget budget;

  /** The rule with {@code policy}'s attempts and backoff. */
  public SettleRule(RetryPolicy policy) {
    this.policy = Objects.requireNonNull(policy, "retryPolicy must not be null");
    this.budget = new RetryBudget(policy);
  }

  /** What becomes of one event. */
  public enum Fate {
    /** The broker has it: the event is done. */
    ACKNOWLEDGED,
    /** Unreadable, or given up on: it goes to the dead letters, and its group moves on. */
    DEAD_LETTERED,
    /** Failed: sent again after {@link Outcome#backoff()}; its group waits for it. */
    RETRY,
    /** An earlier event of its group is retried: not counted, sent again after that one. */
    HELD_BACK
  }

  /**
   * One event as a relay sent it (or did not).
   *
   * @param group what the event's order is kept within; events of one group are given in log order
   * @param unreadable why the event could not be read, so was never sent; {@code null} for a sent one
   * @param index the event's index in the published batch; ignored for an unreadable one
   * @param attemptsSoFar the failed attempts already counted toward the policy
   * @param backoffLevel the failures in a row before this one, outages included: the backoff's level
   */
  public record Sent(Object group, String unreadable, int index, int attemptsSoFar, int backoffLevel) {
    /** A sent event. */
    public static Sent sent(Object group, int index, int attemptsSoFar, int backoffLevel) {
      return new Sent(group, null, index, attemptsSoFar, backoffLevel);
    }

    /** An event that could not be read, and so was never sent. */
    public static Sent unreadable(Object group, String why) {
      return new Sent(group, Objects.requireNonNull(why, "why"), -1, 0, 0);
    }
  }

  /**
   * What became of one event.
   *
   * @param fate what the relay does with it
   * @param attempts the attempts counted now (at least 1 when dead-lettered)
   * @param error the error as kept with a dead letter or a retrying event ({@link RetryBudget#describe}),
   *     {@code null} when acknowledged or held back
   * @param cause the publish error, for a retry's log and meters; {@code null} when there is none
   * @param backoff how long a retried event waits before it goes again; zero otherwise
   */
  public record Outcome(Fate fate, int attempts, String error, Exception cause, Duration backoff) {
    static final Outcome ACKNOWLEDGED = new Outcome(Fate.ACKNOWLEDGED, 0, null, null, Duration.ZERO);
    static final Outcome HELD_BACK = new Outcome(Fate.HELD_BACK, 0, null, null, Duration.ZERO);
  }

  /**
   * Settles a publish's events, given in log order, from the broker's answer {@code result}.
   *
   * @param random the source of the backoff's jitter
   * @return one outcome per event, in the same order
   */
  public List<Outcome> settle(List<Sent> events, PublishResult result, RandomGenerator random) {
    List<Outcome> outcomes = new ArrayList<>(events.size());
    Set<Object> waiting = new HashSet<>();
    for (Sent e : events) {
      Outcome outcome = waiting.contains(e.group()) ? Outcome.HELD_BACK : settle(e, result, random);
      if (outcome.fate() == Fate.RETRY) {
        waiting.add(e.group());
      }
      outcomes.add(outcome);
    }
    return outcomes;
  }

  private Outcome settle(Sent e, PublishResult result, RandomGenerator random) {
    if (e.unreadable() != null) { // never sent: it can only ever fail, so it must not hold its group up
      return new Outcome(Fate.DEAD_LETTERED, 1, e.unreadable(), null, Duration.ZERO);
    }
    Exception error = result.failure(e.index());
    if (error == null) {
      return Outcome.ACKNOWLEDGED;
    }
    RetryBudget.Verdict verdict = budget.afterFailure(error, e.attemptsSoFar(), result);
    if (verdict.deadLetter()) {
      return new Outcome(Fate.DEAD_LETTERED, verdict.attempts(), verdict.error(), error, Duration.ZERO);
    }
    Duration backoff = policy.delayAfter(e.backoffLevel() + 1, random);
    return new Outcome(Fate.RETRY, verdict.attempts(), verdict.error(), error, backoff);
  }
}
