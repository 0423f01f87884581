package io.txbox.spi.support;

import io.txbox.HandlerException;
import io.txbox.Message;
import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import io.txbox.spi.Intake;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How every subscriber treats a message its {@link Intake} failed on: wait with the retry policy's
 * backoff and take it again; once the policy gives up (its attempts are used up, or the handler's
 * error is permanent), hand it to the intake's dead letters and acknowledge it, unless the
 * subscriber blocks ({@link WhenExhausted#BLOCK}).
 *
 * <p>Only the handler's failures ({@link HandlerException}) count toward giving up. Any
 * other failure (the database is down, even an {@link Error}) is retried without limit: an outage
 * is no reason to dead-letter, and dead-lettering needs the database anyway.
 *
 * <pre>{@code
 * Retries.Attempts attempts = retries.of(message);
 * while (running) {
 *   try {
 *     intake.take(message);
 *     acknowledge(delivery);
 *     return;
 *   } catch (Exception | Error e) {     // never skip a message, whatever was thrown
 *     Optional<Duration> wait = attempts.failed(e);
 *     if (wait.isEmpty()) {       // dead-lettered: its key is parked, the rest flows
 *       acknowledge(delivery);
 *       return;
 *     }
 *     sleep(wait.get());
 *   }
 * }
 * }</pre>
 */
public final class Retries {
  private static final Logger log = LoggerFactory.getLogger(Retries.class);

  private final Intake intake;
  private final RetryPolicy policy;
  private final WhenExhausted whenExhausted;

  /** Retries for {@code intake} with {@code policy}; {@code whenExhausted} says what comes after. */
  public Retries(Intake intake, RetryPolicy policy, WhenExhausted whenExhausted) {
    this.intake = Objects.requireNonNull(intake, "intake must not be null");
    this.policy = Objects.requireNonNull(policy, "retryPolicy must not be null");
    this.whenExhausted = Objects.requireNonNull(whenExhausted, "whenExhausted must not be null");
  }

  /** The attempts at {@code message}, none failed yet. */
  public Attempts of(Message message) {
    return new Attempts(Objects.requireNonNull(message, "message must not be null"));
  }

  /** The failed attempts at one message, and what to do after each. Used by one thread. */
  public final class Attempts {
    private final Message message;
    private int handlerFailures;
    private int otherFailures;

    private Attempts(Message message) {
      this.message = message;
    }

    /** The id of the message these are the attempts at. */
    public UUID messageId() {
      return message.id();
    }

    /** Whether these are the attempts at {@code other} (the same id). */
    public boolean isFor(Message other) {
      return message.id().equals(other.id());
    }

    /** Failed attempts so far, of either kind. */
    public int count() {
      return handlerFailures + otherFailures;
    }

    /**
     * After a failed attempt: empty when the message is now dead-lettered and may be
     * acknowledged; else how long to wait before taking it again.
     */
    public Optional<Duration> failed(Throwable error) {
      if (!(error instanceof HandlerException)) {
        otherFailures++;
        return Optional.of(policy.delayAfter(otherFailures, ThreadLocalRandom.current()));
      }
      handlerFailures++;
      if (whenExhausted == WhenExhausted.BLOCK || !policy.givesUp(error, handlerFailures)) {
        return Optional.of(policy.delayAfter(handlerFailures, ThreadLocalRandom.current()));
      }
      Throwable handlerError = error.getCause() != null ? error.getCause() : error;
      try {
        if (intake.deadLetter(message, handlerError, handlerFailures)) {
          log.error("consumer {}: gave up on message {} ({}, key {}) after {} attempts and dead-lettered it;"
              + " later messages of its key wait behind it until the key is retried or discarded: {}",
              intake.consumer(), message.id(), message.type(), message.key(), handlerFailures, handlerError.toString());
          return Optional.empty();
        }
      } catch (Exception e) {
        log.warn("consumer {}: could not dead-letter message {}, trying it again later: {}",
            intake.consumer(), message.id(), e.toString());
      }
      return Optional.of(policy.delayAfter(handlerFailures, ThreadLocalRandom.current()));
    }
  }
}
