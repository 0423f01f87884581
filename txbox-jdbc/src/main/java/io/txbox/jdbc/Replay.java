package io.txbox.jdbc;

import io.txbox.Message;
import io.txbox.spi.Publisher;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.LongConsumer;

/**
 * Publishes events that are still in the log again, by scope, at a bounded rate, to their own
 * destination or to another one (a sandbox). {@code txbox replay} is built on it.
 *
 * <pre>{@code
 * Replay replay = store.replay();
 * Scope scope = Scope.ALL.withSubscription("default").withType("OrderPlaced");
 * Preview preview = replay.preview(scope);              // count, first, last, counts by type
 * Result result = replay.replay(Request.of(scope, "alice").withToDestination("orders.sandbox"),
 *     publisher, published -> {});
 * }</pre>
 *
 * <p>A replay reads the log and publishes; it writes nothing but its audit entry, so live
 * subscriptions go on undisturbed (their checkpoints, leases and retries are not touched). Events
 * keep their ids: consumers that deduplicate ignore what they already processed, which is why a
 * replay meant to be processed again goes to a sandbox destination and consumer. Each key's events
 * are published in the order the relay publishes them (transaction, then position).
 */
public interface Replay {
  /** Default and greatest {@link Request#eventsPerSecond()}. */
  int DEFAULT_EVENTS_PER_SECOND = 500;
  int MAX_EVENTS_PER_SECOND = 100_000;
  /** Default and greatest {@link Request#batchSize()}. */
  int DEFAULT_BATCH_SIZE = 100;
  int MAX_BATCH_SIZE = 5_000;
  /** Default and greatest {@link Request#maxAttempts()}. */
  int DEFAULT_MAX_ATTEMPTS = 5;
  int MAX_ATTEMPTS = 100;
  /** How many failures a {@link Result} describes. */
  int FAILURES_KEPT = 10;

  /**
   * A replay to run.
   *
   * @param scope which events
   * @param toDestination where they go instead of their own destination, or null for their own
   * @param eventsPerSecond the most events published per second, 1 to {@value #MAX_EVENTS_PER_SECOND}
   * @param batchSize events read and published at once, 1 to {@value #MAX_BATCH_SIZE}
   * @param maxAttempts attempts per batch before the replay stops, 1 to {@value #MAX_ATTEMPTS}
   * @param operator who runs it, for the audit table
   */
  record Request(Scope scope, String toDestination, int eventsPerSecond, int batchSize, int maxAttempts,
      String operator) {
    /** Checks every field, naming the one that is wrong. */
    public Request {
      if (scope == null) {
        throw new IllegalArgumentException("scope must not be null (use Scope.ALL)");
      }
      requireLogScope(scope);
      if (toDestination != null && (toDestination.isBlank() || toDestination.length() > Message.MAX_NAME_LENGTH)) {
        throw new IllegalArgumentException("toDestination must be 1 to " + Message.MAX_NAME_LENGTH
            + " characters, was '" + toDestination + "'");
      }
      check("eventsPerSecond", eventsPerSecond, MAX_EVENTS_PER_SECOND);
      check("batchSize", batchSize, MAX_BATCH_SIZE);
      check("maxAttempts", maxAttempts, MAX_ATTEMPTS);
      if (operator == null || operator.isBlank()) {
        throw new IllegalArgumentException("operator must not be blank: the audit table records who replayed");
      }
    }

    /** A replay of {@code scope} by {@code operator} to the events' own destinations, with the defaults. */
    public static Request of(Scope scope, String operator) {
      return new Request(scope, null, DEFAULT_EVENTS_PER_SECOND, DEFAULT_BATCH_SIZE, DEFAULT_MAX_ATTEMPTS, operator);
    }

    public Request withToDestination(String value) {
      return new Request(scope, value, eventsPerSecond, batchSize, maxAttempts, operator);
    }

    public Request withEventsPerSecond(int value) {
      return new Request(scope, toDestination, value, batchSize, maxAttempts, operator);
    }

    public Request withBatchSize(int value) {
      return new Request(scope, toDestination, eventsPerSecond, value, maxAttempts, operator);
    }

    public Request withMaxAttempts(int value) {
      return new Request(scope, toDestination, eventsPerSecond, batchSize, value, operator);
    }

    /** The scope and the destination, for people and the audit table. */
    public String describe() {
      return scope.describe() + (toDestination == null ? "" : ", to destination " + toDestination);
    }

    private static void check(String field, int value, int max) {
      if (value < 1 || value > max) {
        throw new IllegalArgumentException(field + " must be between 1 and " + max + ", was " + value);
      }
    }
  }

  /** One event of a preview, without its payload. */
  record Event(long position, UUID id, String key, String type, String destination, Instant createdAt) {}

  /**
   * What a replay of a scope would publish.
   *
   * @param count how many events
   * @param first the earliest created, if any
   * @param last the latest created, if any
   * @param countsByType how many of each type, most first
   */
  record Preview(long count, Optional<Event> first, Optional<Event> last, Map<String, Long> countsByType) {}

  /**
   * What a replay did.
   *
   * @param published events the broker acknowledged
   * @param failed events the broker refused for good (skipped)
   * @param failures the first {@value #FAILURES_KEPT} refusals, each naming its event
   */
  record Result(long published, long failed, List<String> failures) {}

  /** Thrown when the broker kept failing a batch through every attempt; the replay stopped there. */
  final class StoppedException extends RuntimeException {
    private final long published;

    public StoppedException(long published, int attempts, Exception cause) {
      super("replay stopped after " + published + " published event(s): the broker failed the same batch "
          + attempts + " time(s), last with: " + cause.getMessage() + ". Run the replay again once the broker is"
          + " back; events it publishes twice are ignored by consumers that deduplicate", cause);
      this.published = published;
    }

    /** Events the broker acknowledged before the replay stopped. */
    public long published() {
      return published;
    }
  }

  /** What a replay of {@code scope} would publish; changes nothing. */
  Preview preview(Scope scope);

  /**
   * Publishes the events of the request's scope at its rate, reporting the running count of
   * published events to {@code progress} after each batch; recorded in the audit table.
   *
   * @throws StoppedException when the broker failed a batch {@code maxAttempts} times
   */
  Result replay(Request request, Publisher publisher, LongConsumer progress) throws InterruptedException;

  /**
   * Refuses a scope by error text: it selects dead letters, and a replay reads the log, whose
   * events have no error.
   */
  static void requireLogScope(Scope scope) {
    if (scope.errorContaining() != null) {
      throw new IllegalArgumentException("errorContaining selects dead letters, and a replay reads the log, whose"
          + " events have no error: drop it, or retry the dead letters instead");
    }
  }
}
