package io.txbox.jdbc;

import io.txbox.Message;
import io.txbox.jdbc.internal.OptionalFilters;
import io.txbox.jdbc.internal.PostgresRows;
import io.txbox.jdbc.internal.PostgresTables;
import io.txbox.jdbc.internal.Transactions;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import javax.sql.DataSource;

/**
 * Publishes events that are still in the log again, by scope, at a bounded rate, to their own
 * destination or to another one (a sandbox). {@code txbox replay} is built on it.
 *
 * <pre>{@code
 * PostgresReplay replay = store.replay();
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
public final class PostgresReplay {
  /** Default and greatest {@link Request#eventsPerSecond()}. */
  public static final int DEFAULT_EVENTS_PER_SECOND = 500;
  public static final int MAX_EVENTS_PER_SECOND = 100_000;
  /** Default and greatest {@link Request#batchSize()}. */
  public static final int DEFAULT_BATCH_SIZE = 100;
  public static final int MAX_BATCH_SIZE = 5_000;
  /** Default and greatest {@link Request#maxAttempts()}. */
  public static final int DEFAULT_MAX_ATTEMPTS = 5;
  public static final int MAX_ATTEMPTS = 100;
  /** How many failures a {@link Result} describes. */
  public static final int FAILURES_KEPT = 10;

  private static final Duration FIRST_BACKOFF = Duration.ofMillis(500);
  private static final Duration MAX_BACKOFF = Duration.ofSeconds(10);

  private final Transactions tx;
  private final PostgresTables tables;
  private final PostgresDeadLetters audit;

  PostgresReplay(DataSource dataSource, PostgresTables tables) {
    this.tx = new Transactions(dataSource);
    this.tables = tables;
    this.audit = new PostgresDeadLetters(dataSource, tables);
  }

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
  public record Request(Scope scope, String toDestination, int eventsPerSecond, int batchSize, int maxAttempts,
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
  public record Event(long position, UUID id, String key, String type, String destination, Instant createdAt) {}

  /**
   * What a replay of a scope would publish.
   *
   * @param count how many events
   * @param first the earliest created, if any
   * @param last the latest created, if any
   * @param countsByType how many of each type, most first
   */
  public record Preview(long count, Optional<Event> first, Optional<Event> last, Map<String, Long> countsByType) {}

  /**
   * What a replay did.
   *
   * @param published events the broker acknowledged
   * @param failed events the broker refused for good (skipped)
   * @param failures the first {@value #FAILURES_KEPT} refusals, each naming its event
   */
  public record Result(long published, long failed, List<String> failures) {}

  /** Thrown when the broker kept failing a batch through every attempt; the replay stopped there. */
  public static final class StoppedException extends RuntimeException {
    private final long published;

    StoppedException(long published, int attempts, Exception cause) {
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
  public Preview preview(Scope scope) {
    requireLogScope(scope);
    return tx.inTransaction("previewing a replay", c -> {
      checkSubscription(c, scope);
      Map<String, Long> byType = new LinkedHashMap<>();
      long count = 0;
      try (PreparedStatement p = c.prepareStatement("SELECT o.type, count(*) FROM " + tables.outbox() + " o"
          + where() + " GROUP BY o.type ORDER BY count(*) DESC, o.type")) {
        bind(p, scope);
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            byType.put(rs.getString(1), rs.getLong(2));
            count += rs.getLong(2);
          }
        }
      }
      return new Preview(count, end(c, scope, "ASC"), end(c, scope, "DESC"), byType);
    });
  }

  /**
   * Publishes the events of the request's scope at its rate, reporting the running count of
   * published events to {@code progress} after each batch; recorded in the audit table.
   *
   * @throws StoppedException when the broker failed a batch {@code maxAttempts} times
   */
  public Result replay(Request request, Publisher publisher, LongConsumer progress) throws InterruptedException {
    tx.inTransaction("checking the replay's subscription", c -> {
      checkSubscription(c, request.scope());
      return null;
    });
    Run run = new Run(request, publisher, progress);
    try {
      // A batch never holds more than a second's worth, so the rate holds from the first batch on.
      int batchSize = Math.min(request.batchSize(), request.eventsPerSecond());
      Cursor after = Cursor.START;
      List<Read> page;
      do {
        page = page(request.scope(), after, batchSize);
        run.publish(page.stream().filter(r -> r.message() != null)
            .map(r -> retarget(r.message(), request.toDestination())).toList());
        after = page.isEmpty() ? after : page.get(page.size() - 1).cursor();
      } while (page.size() == batchSize);
    } finally {
      audit.record(request.operator(), "replay", "outbox", request.describe(), run.published, false);
    }
    return new Result(run.published, run.failed, List.copyOf(run.failures));
  }

  /** Where a page of the log ends: the primary key of its last row. */
  private record Cursor(int bucket, String txId, long position) {
    static final Cursor START = new Cursor(-1, "0", 0);
  }

  private record Read(Cursor cursor, Message message) {}

  /** Publishing, pacing and counting for one replay. */
  private static final class Run {
    private final Request request;
    private final Publisher publisher;
    private final LongConsumer progress;
    private final long startNanos = System.nanoTime();
    private long published;
    private long failed;
    private final List<String> failures = new ArrayList<>();

    Run(Request request, Publisher publisher, LongConsumer progress) {
      this.request = request;
      this.publisher = publisher;
      this.progress = progress;
    }

    /**
     * Publishes {@code batch}; a failure that may pass resends the batch from the first such
     * failure on, as the relay does, so each key's order holds for what the consumer keeps.
     */
    void publish(List<Message> batch) throws InterruptedException {
      List<Message> left = batch;
      Duration backoff = FIRST_BACKOFF;
      for (int attempt = 1; !left.isEmpty(); attempt++) {
        pace();
        PublishResult result = publisher.publish(left);
        int retryFrom = firstTransientFailure(result);
        count(left, result, retryFrom);
        if (retryFrom == left.size()) {
          break;
        }
        if (attempt == request.maxAttempts()) {
          throw new StoppedException(published, attempt, result.failure(retryFrom));
        }
        left = left.subList(retryFrom, left.size());
        waitUntil(System.nanoTime() + backoff.toNanos());
        backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
      }
      progress.accept(published);
    }

    private static int firstTransientFailure(PublishResult result) {
      for (var failure : result.failures().entrySet()) {
        if (!(failure.getValue() instanceof PermanentPublishException)) {
          return failure.getKey();
        }
      }
      return result.size();
    }

    /** Counts what was settled before {@code retryFrom}: acknowledged, or refused for good. */
    private void count(List<Message> sent, PublishResult result, int retryFrom) {
      for (int i = 0; i < retryFrom; i++) {
        Exception failure = result.failure(i);
        if (failure == null) {
          published++;
        } else {
          failed++;
          if (failures.size() < FAILURES_KEPT) {
            failures.add("event " + sent.get(i).id() + " to " + sent.get(i).destination() + ": " + failure.getMessage());
          }
        }
      }
    }

    /** Waits until what was sent so far took at least the time the rate allows for it. */
    private void pace() throws InterruptedException {
      waitUntil(startNanos + (published + failed) * 1_000_000_000L / request.eventsPerSecond());
    }

    /**
     * Holds the replay's thread until {@code dueNanos}: a replay is one caller's job, done in
     * that caller's thread (the command's, or the console's replay worker), so pausing it is the
     * rate limit and the backoff; an interrupt ends the wait and the replay.
     */
    private static void waitUntil(long dueNanos) throws InterruptedException {
      long waitNanos = dueNanos - System.nanoTime();
      if (waitNanos > 0) {
        TimeUnit.NANOSECONDS.sleep(waitNanos);
      }
    }
  }

  private static Message retarget(Message m, String destination) {
    if (destination == null) {
      return m;
    }
    return new Message(m.id(), m.type(), m.version(), m.key(), destination, m.payload(), m.contentType(), m.headers(),
        m.createdAt(), m.availableAt());
  }

  /**
   * The next {@code limit} events of the scope after {@code after}, in primary-key order: one
   * index scan, each bucket (so each key) in the relay's order. A row that breaks the message
   * rules comes back without a message and is skipped: the relay dead-lettered it, it never
   * reached a broker.
   */
  private List<Read> page(Scope scope, Cursor after, int limit) {
    return tx.inTransaction("reading the log for a replay", c -> {
      try (PreparedStatement p = c.prepareStatement("SELECT o.bucket, o.tx_id::text, o.position, o.id, o.key, o.type,"
          + " o.version, o.destination, o.payload, o.content_type, o.headers::text, o.created_at, o.available_at"
          + " FROM " + tables.outbox() + " o" + where() + " AND (o.bucket, o.tx_id, o.position) > (?, ?::xid8, ?)"
          + " ORDER BY o.bucket, o.tx_id, o.position LIMIT ?")) {
        int next = bind(p, scope);
        p.setInt(next++, after.bucket());
        p.setString(next++, after.txId());
        p.setLong(next++, after.position());
        p.setInt(next, limit);
        List<Read> reads = new ArrayList<>();
        try (ResultSet rs = p.executeQuery()) {
          while (rs.next()) {
            Cursor cursor = new Cursor(rs.getInt(1), rs.getString(2), rs.getLong(3));
            try {
              reads.add(new Read(cursor, PostgresRows.message(rs, 4)));
            } catch (RuntimeException unreadable) {
              reads.add(new Read(cursor, null));
            }
          }
        }
        return reads;
      }
    });
  }

  private Optional<Event> end(java.sql.Connection c, Scope scope, String direction) throws SQLException {
    try (PreparedStatement p = c.prepareStatement("SELECT o.position, o.id, o.key, o.type, o.destination, o.created_at"
        + " FROM " + tables.outbox() + " o" + where() + " ORDER BY o.created_at " + direction + ", o.position "
        + direction + " LIMIT 1")) {
      bind(p, scope);
      try (ResultSet rs = p.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        return Optional.of(new Event(rs.getLong(1), rs.getObject(2, UUID.class), rs.getString(3), rs.getString(4),
            rs.getString(5), rs.getObject(6, OffsetDateTime.class).toInstant()));
      }
    }
  }

  /** A replay reads the log, whose events have no error: a scope by error is a dead-letter scope given by mistake. */
  private static void requireLogScope(Scope scope) {
    if (scope.errorContaining() != null) {
      throw new IllegalArgumentException("errorContaining selects dead letters, and a replay reads the log, whose"
          + " events have no error: drop it, or retry the dead letters instead");
    }
  }

  /** A scope's subscription must exist: a typo would otherwise replay nothing and look fine. */
  private void checkSubscription(java.sql.Connection c, Scope scope) throws SQLException {
    if (scope.subscription() == null) {
      return;
    }
    try (PreparedStatement p = c.prepareStatement("SELECT string_agg(DISTINCT subscription, ', ') FILTER"
        + " (WHERE subscription <> ?), bool_or(subscription = ?) FROM " + tables.subscription())) {
      p.setString(1, scope.subscription());
      p.setString(2, scope.subscription());
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        if (!rs.getBoolean(2)) {
          throw new IllegalArgumentException("invalid subscription '" + scope.subscription()
              + "': no relay has run it here; known subscriptions: "
              + (rs.getString(1) == null ? "none" : rs.getString(1)));
        }
      }
    }
  }

  /** Every condition of a scope; a null parameter matches anything. */
  private String where() {
    return " WHERE (?::text IS NULL OR EXISTS (SELECT 1 FROM " + tables.subscription() + " s"
        + "   WHERE s.subscription = ? AND s.bucket = o.bucket AND (o.tx_id, o.position) <= (s.tx_id, s.position)"
        + "     AND NOT EXISTS (SELECT 1 FROM " + tables.deadLetter() + " d"
        + "       WHERE d.subscription = s.subscription AND d.position = o.position)))"
        + " AND (?::text IS NULL OR o.destination = ?) AND (?::text IS NULL OR o.type = ?)"
        + " AND (?::text IS NULL OR o.key = ?)"
        + " AND (?::timestamptz IS NULL OR o.created_at >= ?) AND (?::timestamptz IS NULL OR o.created_at < ?)"
        + " AND (?::bigint IS NULL OR o.position >= ?) AND (?::bigint IS NULL OR o.position <= ?)"
        + " AND (?::uuid IS NULL OR o.id = ?)";
  }

  /** Binds a scope to {@link #where()}; returns the next parameter. */
  private static int bind(PreparedStatement p, Scope scope) throws SQLException {
    return OptionalFilters.bind(p, 1, scope.subscription(), scope.destination(), scope.type(), scope.key(),
        scope.since(), scope.until(), scope.fromPosition(), scope.toPosition(), scope.id());
  }
}
