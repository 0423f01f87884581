package io.txbox.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.txbox.InboxQueue;
import io.txbox.spi.Subscriber;
import java.util.Objects;
import java.util.function.ToDoubleFunction;

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
 *   <tr><td>{@code txbox.inbox.queue.processed}</td><td>counter</td>
 *       <td>queued messages the queue's workers processed</td></tr>
 *   <tr><td>{@code txbox.inbox.queue.dead.letters}</td><td>counter</td>
 *       <td>queued messages the workers gave up on</td></tr>
 * </table>
 *
 * <p>The duplicate hit rate is {@code duplicates / (processed + duplicates)}.
 *
 * <pre>{@code
 * InboxMeters.of("inventory", subscriber).bindTo(registry);
 * InboxMeters.of(queue).bindTo(registry);
 * }</pre>
 */
public final class InboxMeters implements MeterBinder {
  private final String consumer;
  private final Subscriber subscriber;
  private final InboxQueue queue;

  private InboxMeters(String consumer, Subscriber subscriber, InboxQueue queue) {
    this.consumer = consumer;
    this.subscriber = subscriber;
    this.queue = queue;
  }

  /** The counters of {@code subscriber}, which takes messages for {@code consumer}. */
  public static InboxMeters of(String consumer, Subscriber subscriber) {
    return new InboxMeters(
        Objects.requireNonNull(consumer, "consumer must not be null"),
        Objects.requireNonNull(subscriber, "subscriber must not be null"),
        null);
  }

  /** The counters of {@code queue}'s workers. */
  public static InboxMeters of(InboxQueue queue) {
    Objects.requireNonNull(queue, "queue must not be null");
    return new InboxMeters(queue.consumer(), null, queue);
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    if (subscriber != null) {
      counter(registry, "txbox.inbox.processed", "Messages handled and committed", subscriber, Subscriber::processed);
      counter(registry, "txbox.inbox.duplicates", "Redeliveries the inbox recognised", subscriber, Subscriber::duplicates);
      counter(registry, "txbox.inbox.rejected", "Messages that could not be read", subscriber, Subscriber::rejected);
    }
    if (queue != null) {
      counter(registry, "txbox.inbox.queue.processed", "Queued messages processed", queue, InboxQueue::processed);
      counter(registry, "txbox.inbox.queue.dead.letters", "Queued messages given up on", queue, InboxQueue::deadLettered);
    }
  }

  private <T> void counter(MeterRegistry registry, String name, String description, T source, ToDoubleFunction<T> count) {
    FunctionCounter.builder(name, source, count)
        .tag("consumer", consumer)
        .description(description)
        .register(registry);
  }
}
