package io.txbox.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.txbox.InboxQueue;
import io.txbox.spi.Subscriber;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;

/**
 * Counters of what a subscriber took into the inbox, tagged with the {@code consumer}:
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>Name</th><th>Type</th><th>What it counts</th></tr>
 *   <tr><td>{@code txbox.inbox.processed}</td><td>counter</td>
 *       <td>messages handled and committed (stored, for a queue's subscriber)</td></tr>
 *   <tr><td>{@code txbox.inbox.duplicates}</td><td>counter</td>
 *       <td>redeliveries the inbox recognised; the handler did not run again</td></tr>
 *   <tr><td>{@code txbox.inbox.rejected}</td><td>counter</td>
 *       <td>messages skipped because they could not be read as txbox messages</td></tr>
 *   <tr><td>{@code txbox.inbox.failures}</td><td>counter</td>
 *       <td>attempts that failed and were retried</td></tr>
 *   <tr><td>{@code txbox.inbox.dead.letters}</td><td>counter</td>
 *       <td>messages given up on after their retries: kept as dead, their keys parked</td></tr>
 *   <tr><td>{@code txbox.inbox.parked}</td><td>counter</td>
 *       <td>messages stored behind a dead message of their key, not handled yet</td></tr>
 *   <tr><td>{@code txbox.inbox.troubled}</td><td>gauge</td>
 *       <td>1 while the subscriber's last poll or fetch failed (broker or database unreachable);
 *           it goes on trying</td></tr>
 *   <tr><td>{@code txbox.inbox.queue.processed}</td><td>counter</td>
 *       <td>queued messages the queue's workers processed</td></tr>
 *   <tr><td>{@code txbox.inbox.queue.dead.letters}</td><td>counter</td>
 *       <td>queued messages the workers gave up on (kept as dead, their keys parked)</td></tr>
 * </table>
 *
 * <p>The duplicate hit rate is {@code duplicates / (processed + duplicates)}; the retry-to-success
 * ratio is {@code failures / processed}.
 *
 * <pre>{@code
 * InboxMeters.of("inventory", subscriber).bindTo(registry);
 * InboxMeters.of(queue).bindTo(registry);
 * }</pre>
 */
public final class InboxMeters implements MeterBinder {
  private final String consumer;
  private final Object source;
  private final Function<Object, Subscriber> current;
  private final InboxQueue queue;

  private InboxMeters(String consumer, Object source, Function<Object, Subscriber> current, InboxQueue queue) {
    this.consumer = consumer;
    this.source = source;
    this.current = current;
    this.queue = queue;
  }

  /** The counters of {@code subscriber}, which takes messages for {@code consumer}. */
  public static InboxMeters of(String consumer, Subscriber subscriber) {
    Objects.requireNonNull(subscriber, "subscriber must not be null");
    return following(consumer, subscriber, s -> s);
  }

  /**
   * The counters of whichever subscriber {@code source} holds now, for one that is replaced when it
   * restarts: the counters start again from zero, as counters of a restarted process do, and read
   * zero while {@code current} gives null. Micrometer holds {@code source} weakly: it must live as
   * long as the application, as a Spring bean does.
   */
  public static <T> InboxMeters following(String consumer, T source, Function<T, Subscriber> current) {
    Objects.requireNonNull(consumer, "consumer must not be null");
    Objects.requireNonNull(source, "source must not be null");
    Objects.requireNonNull(current, "current must not be null");
    @SuppressWarnings("unchecked")
    Function<Object, Subscriber> untyped = o -> current.apply((T) o);
    return new InboxMeters(consumer, source, untyped, null);
  }

  /** The counters of {@code queue}'s workers. */
  public static InboxMeters of(InboxQueue queue) {
    Objects.requireNonNull(queue, "queue must not be null");
    return new InboxMeters(queue.consumer(), null, null, queue);
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    if (source != null) {
      // The source, not this binder, is the counters' state: Micrometer keeps it only weakly.
      counter(registry, "txbox.inbox.processed", "Messages handled and committed", source, o -> count(o, Subscriber::processed));
      counter(registry, "txbox.inbox.duplicates", "Redeliveries the inbox recognised", source, o -> count(o, Subscriber::duplicates));
      counter(registry, "txbox.inbox.rejected", "Messages that could not be read", source, o -> count(o, Subscriber::rejected));
      counter(registry, "txbox.inbox.failures", "Attempts that failed and were retried", source, o -> count(o, Subscriber::failures));
      counter(registry, "txbox.inbox.dead.letters", "Messages given up on and kept as dead", source,
          o -> count(o, Subscriber::deadLettered));
      counter(registry, "txbox.inbox.parked", "Messages stored behind a dead message of their key", source,
          o -> count(o, Subscriber::parked));
      Gauge.builder("txbox.inbox.troubled", source, o -> count(o, s -> s.isTroubled() ? 1 : 0))
          .tag("consumer", consumer)
          .description("1 while the subscriber's last poll or fetch failed; it goes on trying")
          .register(registry);
    }
    if (queue != null) {
      counter(registry, "txbox.inbox.queue.processed", "Queued messages processed", queue, InboxQueue::processed);
      counter(registry, "txbox.inbox.queue.dead.letters", "Queued messages given up on", queue, InboxQueue::deadLettered);
    }
  }

  private double count(Object source, ToLongFunction<Subscriber> count) {
    Subscriber now = current.apply(source);
    return now == null ? 0 : count.applyAsLong(now);
  }

  private <T> void counter(MeterRegistry registry, String name, String description, T source, ToDoubleFunction<T> count) {
    FunctionCounter.builder(name, source, count)
        .tag("consumer", consumer)
        .description(description)
        .register(registry);
  }
}
