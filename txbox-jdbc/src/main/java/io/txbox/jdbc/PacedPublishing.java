package io.txbox.jdbc;

import io.txbox.Message;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;

/**
 * The publishing half of a {@link Replay}, the same on every database: batches paced to the
 * request's rate, retried as the relay retries them, and counted. A store's replay reads the log
 * in its own SQL and hands each page here.
 *
 * <pre>{@code
 * PacedPublishing run = new PacedPublishing(request, publisher, progress);
 * run.publish(page);   // for each page of the log, in the relay's order
 * return run.result();
 * }</pre>
 */
public final class PacedPublishing {
  private static final Duration FIRST_BACKOFF = Duration.ofMillis(500);
  private static final Duration MAX_BACKOFF = Duration.ofSeconds(10);

  private final Replay.Request request;
  private final Publisher publisher;
  private final LongConsumer progress;
  private final long startNanos = System.nanoTime();
  private long published;
  private long failed;
  private final List<String> failures = new ArrayList<>();

  /** One replay of {@code request} through {@code publisher}, telling {@code progress} what was published. */
  public PacedPublishing(Replay.Request request, Publisher publisher, LongConsumer progress) {
    this.request = request;
    this.publisher = publisher;
    this.progress = progress;
  }

  /**
   * Publishes {@code batch}; a failure that may pass resends the batch from the first such
   * failure on, as the relay does, so each key's order holds for what the consumer keeps.
   */
  public void publish(List<Message> batch) throws InterruptedException {
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
        throw new Replay.StoppedException(published, attempt, result.failure(retryFrom));
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
        if (failures.size() < Replay.FAILURES_KEPT) {
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

  /** Events acknowledged so far. */
  public long published() {
    return published;
  }

  /** What the replay did. */
  public Replay.Result result() {
    return new Replay.Result(published, failed, List.copyOf(failures));
  }

  /** {@code m} sent to {@code destination} instead of its own; itself when {@code destination} is null. */
  public static Message retarget(Message m, String destination) {
    if (destination == null) {
      return m;
    }
    return new Message(m.id(), m.type(), m.version(), m.key(), destination, m.payload(), m.contentType(), m.headers(),
        m.createdAt(), m.availableAt());
  }
}
