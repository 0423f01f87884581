package io.txbox.jdbc;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Which events an operator's command acts on: the outbox's dead letters to list, retry or discard
 * ({@link DeadLetters}), or the log's events to publish again ({@link Replay}).
 * Null fields match anything; {@link #ALL} matches everything.
 *
 * <pre>{@code
 * Scope scope = Scope.ALL.withSubscription("default").withType("OrderPlaced").withKey("customer-7");
 * deadLetters.retry(scope.withErrorContaining("RecordTooLarge"), "alice");
 * replay.preview(scope.withPeriod(Instant.parse("2026-11-26T08:00:00Z"), null));
 * }</pre>
 *
 * @param subscription dead letters: the subscription that gave up; a replay: only events this
 *     subscription has delivered (at or before its checkpoints, and not dead-lettered by it)
 * @param destination the events' destination
 * @param type the event type
 * @param key the event key
 * @param since at or after: when the letter was dead-lettered, or when a replayed event was written
 * @param until before, the same
 * @param fromPosition the event's position in the log, at or after
 * @param toPosition the event's position in the log, at or before
 * @param errorContaining dead letters only: text in the error
 * @param id one event
 */
public record Scope(String subscription, String destination, String type, String key, Instant since, Instant until,
    Long fromPosition, Long toPosition, String errorContaining, UUID id) {
  /** Everything. */
  public static final Scope ALL = new Scope(null, null, null, null, null, null, null, null, null, null);

  /** Refuses a range that ends before it starts: it can match nothing, and was surely meant otherwise. */
  public Scope {
    if (since != null && until != null && !since.isBefore(until)) {
      throw new IllegalArgumentException("since must be before until, was " + since + " and " + until
          + ": give a range that starts before it ends");
    }
    if (fromPosition != null && fromPosition < 1 || toPosition != null && toPosition < 1) {
      throw new IllegalArgumentException((fromPosition != null && fromPosition < 1 ? "fromPosition" : "toPosition")
          + " must be >= 1, the first position of the log, was " + (fromPosition != null && fromPosition < 1
          ? fromPosition : toPosition));
    }
    if (fromPosition != null && toPosition != null && fromPosition > toPosition) {
      throw new IllegalArgumentException("fromPosition must be <= toPosition, was " + fromPosition + " and "
          + toPosition + ": give a range that starts before it ends");
    }
  }

  public Scope withSubscription(String value) {
    return new Scope(value, destination, type, key, since, until, fromPosition, toPosition, errorContaining, id);
  }

  public Scope withDestination(String value) {
    return new Scope(subscription, value, type, key, since, until, fromPosition, toPosition, errorContaining, id);
  }

  public Scope withType(String value) {
    return new Scope(subscription, destination, value, key, since, until, fromPosition, toPosition, errorContaining, id);
  }

  public Scope withKey(String value) {
    return new Scope(subscription, destination, type, value, since, until, fromPosition, toPosition, errorContaining, id);
  }

  /** Events in {@code [since, until)} (see {@link #since()}); either may be null. */
  public Scope withPeriod(Instant from, Instant to) {
    return new Scope(subscription, destination, type, key, from, to, fromPosition, toPosition, errorContaining, id);
  }

  /** Events at positions {@code [from, to]}; either may be null. */
  public Scope withPositions(Long from, Long to) {
    return new Scope(subscription, destination, type, key, since, until, from, to, errorContaining, id);
  }

  /** Dead letters whose error contains {@code value}. */
  public Scope withErrorContaining(String value) {
    return new Scope(subscription, destination, type, key, since, until, fromPosition, toPosition, value, id);
  }

  /** The event {@code value}. */
  public Scope withId(UUID value) {
    return new Scope(subscription, destination, type, key, since, until, fromPosition, toPosition, errorContaining, value);
  }

  /** What the scope selects, for people and the audit table. */
  public String describe() {
    List<String> parts = new ArrayList<>();
    add(parts, "subscription", subscription);
    add(parts, "destination", destination);
    add(parts, "type", type);
    add(parts, "key", key);
    add(parts, "since", since);
    add(parts, "until", until);
    add(parts, "from position", fromPosition);
    add(parts, "to position", toPosition);
    add(parts, "error containing", errorContaining);
    add(parts, "id", id);
    return parts.isEmpty() ? "all" : String.join(", ", parts);
  }

  private static void add(List<String> parts, String name, Object value) {
    if (value != null) {
      parts.add(name + " " + value);
    }
  }
}
