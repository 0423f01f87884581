package io.txbox;

import io.txbox.spi.PermanentPublishException;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Predicate;
import java.util.random.RandomGenerator;

/**
 * How a bucket retries an event the broker did not accept: exponential backoff with full jitter,
 * a limit on attempts, and which errors are permanent (dead-lettered at once).
 *
 * <p>The delay before retry {@code n} is a random duration between zero and
 * {@code min(maxDelay, initialDelay × multiplier^(n-1))} ("full jitter"), so that buckets failing
 * together do not retry together.
 *
 * <pre>{@code
 * RetryPolicy policy = RetryPolicy.builder()
 *     .initialDelay(Duration.ofMillis(200))
 *     .maxDelay(Duration.ofSeconds(30))
 *     .maxAttempts(20)
 *     .permanentWhen(e -> e instanceof IllegalArgumentException)
 *     .build();
 * }</pre>
 *
 * <p>Attempts count only when the broker accepted other events in the same round: when nothing
 * gets through (the broker is down), the bucket keeps retrying at {@code maxDelay} and no event is
 * dead-lettered for an outage.
 */
public final class RetryPolicy {

  /** Default delay bound before the first retry: 100 ms. */
  public static final Duration DEFAULT_INITIAL_DELAY = Duration.ofMillis(100);

  /** Default upper bound on any delay: 30 s. */
  public static final Duration DEFAULT_MAX_DELAY = Duration.ofSeconds(30);

  /** Default growth of the delay bound per attempt: 2. */
  public static final double DEFAULT_MULTIPLIER = 2.0;

  /** Default attempts before an event is dead-lettered: 10. */
  public static final int DEFAULT_MAX_ATTEMPTS = 10;

  /** Highest accepted {@code maxAttempts}. */
  public static final int MAX_ATTEMPTS_LIMIT = 1_000_000;

  private static final RetryPolicy DEFAULTS = builder().build();

  private final Duration initialDelay;
  private final Duration maxDelay;
  private final double multiplier;
  private final int maxAttempts;
  private final Predicate<Throwable> permanent;

  private RetryPolicy(Builder b) {
    this.initialDelay = b.initialDelay;
    this.maxDelay = b.maxDelay;
    this.multiplier = b.multiplier;
    this.maxAttempts = b.maxAttempts;
    this.permanent = b.permanent;
  }

  /** The defaults: 100 ms, doubling up to 30 s, 10 attempts. */
  public static RetryPolicy defaults() {
    return DEFAULTS;
  }

  /** A builder starting from the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The delay before the next attempt, after {@code failedAttempts} failures (1 or more), drawn
   * from {@code random}.
   */
  public Duration delayAfter(int failedAttempts, RandomGenerator random) {
    return Duration.ofNanos((long) (random.nextDouble() * delayBound(failedAttempts).toNanos()));
  }

  /** The upper bound of the delay after {@code failedAttempts} failures, before jitter. */
  public Duration delayBound(int failedAttempts) {
    double factor = Math.pow(multiplier, Math.max(0, failedAttempts - 1));
    double nanos = initialDelay.toNanos() * factor;
    return nanos >= maxDelay.toNanos() ? maxDelay : Duration.ofNanos((long) nanos);
  }

  /**
   * Whether the error (or one of its causes) is permanent: a {@link PermanentPublishException}, an
   * {@link UnprocessableMessageException}, or what {@link Builder#permanentWhen} says.
   */
  public boolean isPermanent(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof PermanentPublishException || t instanceof UnprocessableMessageException || permanent.test(t)) {
        return true;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return false;
  }

  /** Whether an event that failed {@code failedAttempts} times with {@code error} is given up. */
  public boolean givesUp(Throwable error, int failedAttempts) {
    return isPermanent(error) || failedAttempts >= maxAttempts;
  }

  /** Delay bound before the first retry. */
  public Duration initialDelay() {
    return initialDelay;
  }

  /** Upper bound on any delay. */
  public Duration maxDelay() {
    return maxDelay;
  }

  /** Growth of the delay bound per attempt. */
  public double multiplier() {
    return multiplier;
  }

  /** Attempts before an event is dead-lettered. */
  public int maxAttempts() {
    return maxAttempts;
  }

  @Override
  public String toString() {
    return "RetryPolicy[initialDelay=" + initialDelay + ", maxDelay=" + maxDelay
        + ", multiplier=" + multiplier + ", maxAttempts=" + maxAttempts + "]";
  }

  /** Builds a {@link RetryPolicy}; {@link #build()} checks every setting. */
  public static final class Builder {
    private Duration initialDelay = DEFAULT_INITIAL_DELAY;
    private Duration maxDelay = DEFAULT_MAX_DELAY;
    private double multiplier = DEFAULT_MULTIPLIER;
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private Predicate<Throwable> permanent = e -> false;

    private Builder() {}

    /** Delay bound before the first retry; more than zero. Default 100 ms. */
    public Builder initialDelay(Duration initialDelay) {
      this.initialDelay = initialDelay;
      return this;
    }

    /** Upper bound on any delay; at least {@code initialDelay}. Default 30 s. */
    public Builder maxDelay(Duration maxDelay) {
      this.maxDelay = maxDelay;
      return this;
    }

    /** Growth of the delay bound per attempt; 1 or more. Default 2. */
    public Builder multiplier(double multiplier) {
      this.multiplier = multiplier;
      return this;
    }

    /** Attempts before dead-lettering; 1 to {@value RetryPolicy#MAX_ATTEMPTS_LIMIT}. Default 10. */
    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
      return this;
    }

    /**
     * Also treats errors matching {@code predicate} as permanent, besides {@link
     * PermanentPublishException}. Tested against the error and each of its causes.
     */
    public Builder permanentWhen(Predicate<Throwable> predicate) {
      Objects.requireNonNull(predicate, "permanentWhen predicate must not be null");
      this.permanent = this.permanent.or(predicate);
      return this;
    }

    /** Checks the settings and builds the policy. */
    public RetryPolicy build() {
      if (initialDelay == null || initialDelay.isNegative() || initialDelay.isZero()) {
        throw new IllegalArgumentException("retry initialDelay must be > 0, was " + initialDelay);
      }
      if (maxDelay == null || maxDelay.compareTo(initialDelay) < 0) {
        throw new IllegalArgumentException(
            "retry maxDelay must be >= initialDelay (" + initialDelay + "), was " + maxDelay);
      }
      if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
        throw new IllegalArgumentException("retry multiplier must be >= 1, was " + multiplier);
      }
      if (maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS_LIMIT) {
        throw new IllegalArgumentException(
            "retry maxAttempts must be >= 1 and <= " + MAX_ATTEMPTS_LIMIT + ", was " + maxAttempts);
      }
      return new RetryPolicy(this);
    }
  }
}
