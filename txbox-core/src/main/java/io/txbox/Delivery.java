package io.txbox;

import io.txbox.spi.Publisher;
import io.txbox.spi.TransactionalPublisher;
import java.util.Locale;

/**
 * What a relay promises about the events it publishes.
 *
 * <pre>{@code
 * Relay relay = Relay.builder(store, KafkaExactlyOncePublisher.builder()
 *         .bootstrapServers("kafka:9092").build())
 *     .delivery(Delivery.EXACTLY_ONCE)
 *     .build();
 * }</pre>
 */
public enum Delivery {
  /**
   * Every committed event reaches the broker at least once, in order per key; a crash, a lost lease
   * or a broker timeout can send an event again, and a txbox inbox drops what arrives twice. The
   * default, and what every broker can do.
   */
  AT_LEAST_ONCE,

  /**
   * Every committed event becomes visible exactly once to a consumer that reads only committed
   * records (Kafka's {@code isolation.level=read_committed}), in order per key, through relay
   * crashes, lost leases and frozen relays: each round's records and the relay's progress are
   * committed in one broker transaction, the progress is read back from the broker before a bucket
   * is published again, and a relay that lost its buckets is fenced by the broker. Needs a
   * {@link io.txbox.spi.TransactionalPublisher} (Kafka); docs/exactly-once.md says what each broker
   * and each kind of consumer gets.
   */
  EXACTLY_ONCE;

  /** The name as front ends spell it: {@code at-least-once}, {@code exactly-once}. */
  public String spelling() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /**
   * Checks that {@code publisher} can keep this promise: exactly-once needs a {@link
   * TransactionalPublisher}. The relays' builders call it.
   *
   * @throws IllegalArgumentException naming what to use instead
   */
  public void requireSupportedBy(Publisher publisher) {
    if (this == EXACTLY_ONCE && !(publisher instanceof TransactionalPublisher)) {
      throw new IllegalArgumentException("delivery exactly-once needs a publisher that publishes transactionally"
          + " (io.txbox.spi.TransactionalPublisher), such as Kafka's KafkaExactlyOncePublisher; "
          + publisher.getClass().getSimpleName() + " is not one. Use delivery at-least-once with a txbox inbox"
          + " on the consuming side, or see docs/exactly-once.md for what each broker can do");
    }
  }

  /**
   * The delivery spelled {@code text} ({@code exactly-once}, {@code EXACTLY_ONCE}), for settings.
   *
   * @throws IllegalArgumentException naming the setting's values
   */
  public static Delivery parse(String text) {
    for (Delivery d : values()) {
      String given = String.valueOf(text).trim();
      if (d.spelling().equalsIgnoreCase(given) || d.name().equalsIgnoreCase(given)) {
        return d;
      }
    }
    throw new IllegalArgumentException("delivery must be at-least-once or exactly-once, was '" + text + "'");
  }
}
