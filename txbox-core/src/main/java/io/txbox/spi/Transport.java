package io.txbox.spi;

import io.txbox.RetryPolicy;
import io.txbox.WhenExhausted;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * A broker txbox relays to and consumes from, found through {@link ServiceLoader}: each broker
 * module registers its transport in {@code META-INF/services/io.txbox.spi.Transport}, and the
 * Spring starter and the {@code txbox} command find it there. A fifth broker is one module: its
 * publisher, its subscriber, this class and its settings.
 *
 * <pre>{@code
 * Transport nats = Transport.named("nats", Transport.class.getClassLoader());
 * TransportSettings settings = new TransportSettings(nats, Map.of("servers", "nats://localhost:4222"),
 *     setting -> "txbox.nats." + setting);
 * try (Publisher publisher = nats.publisher(settings, SendScope.NONE)) { ... }
 * }</pre>
 */
public interface Transport {

  /**
   * The broker's name, lower case ({@code kafka}): the value of {@code --broker} and
   * {@code txbox.broker}, and the first word of its settings' names.
   */
  String name();

  /** The broker's name in traces, OpenTelemetry's {@code messaging.system}: by default its {@link #name()}. */
  default String system() {
    return name();
  }

  /** Every setting the transport reads, in the order a user meets them. */
  List<TransportSetting> settings();

  /**
   * Where the broker is, for logs and status lines: by default the value of its
   * {@link TransportSetting.Role#ADDRESS} setting; empty when it is not known. Secrets in it are
   * masked by the caller.
   */
  default Optional<String> where(TransportSettings settings) {
    return settings().stream().filter(s -> s.role() == TransportSetting.Role.ADDRESS).findFirst()
        .flatMap(s -> settings.text(s.name()));
  }

  /** A publisher (not connected yet) from {@code settings}, entering {@code sendScope} around each send. */
  Publisher publisher(TransportSettings settings, SendScope sendScope);

  /**
   * A publisher for {@link io.txbox.Delivery#EXACTLY_ONCE} (not connected yet) from {@code settings}.
   * A broker without transactions that can hold a relay's progress beside its messages cannot:
   * by default this refuses, naming the broker; a transport says more where it knows more.
   *
   * @throws IllegalArgumentException when the broker cannot publish exactly once, saying why and
   *     what to use instead
   */
  default TransactionalPublisher exactlyOncePublisher(TransportSettings settings, SendScope sendScope) {
    throw new IllegalArgumentException("delivery exactly-once is not possible with " + name() + ": it has no"
        + " transaction that can hold a relay's progress beside its messages, so a relay that crashes or loses its"
        + " buckets sends some events again. Use delivery at-least-once, with a txbox inbox (or the broker's own"
        + " deduplication) on the consuming side; docs/exactly-once.md says what each broker can do");
  }

  /** A subscriber (not started) from {@code settings}, feeding {@code subscription}'s sources into its intake. */
  Subscriber subscriber(TransportSettings settings, Subscription subscription);

  /**
   * What a subscriber reads and how, as the front end was told it; broker settings come apart, in
   * {@link TransportSettings}.
   *
   * @param intake where messages go (an inbox, a queue, a Spring transaction around one)
   * @param sources the topics, streams or queues to read from
   * @param concurrency threads (or members) consuming at once
   * @param retryPolicy how a failing message is retried
   * @param whenExhausted what happens once the policy gives up
   * @param drainTimeout how long closing waits for the message in hand
   * @param batchSize most messages taken in one inbox transaction
   */
  record Subscription(Intake intake, List<String> sources, int concurrency, RetryPolicy retryPolicy,
      WhenExhausted whenExhausted, Duration drainTimeout, int batchSize) {
    /** Copies the sources. */
    public Subscription {
      Objects.requireNonNull(intake, "intake");
      sources = List.copyOf(sources);
    }

    /** The one source of a broker that reads one (a stream, a queue); {@code what} names it for the error. */
    public String single(String what) {
      if (sources.size() != 1) {
        throw new IllegalArgumentException("consumer " + intake.consumer() + " reads from one " + what
            + ", but its sources are " + sources);
      }
      return sources.get(0);
    }
  }

  /** The transports on {@code loader}'s class path, by name. */
  static List<Transport> installed(ClassLoader loader) {
    List<Transport> found = new ArrayList<>();
    ServiceLoader.load(Transport.class, loader).forEach(found::add);
    found.sort(Comparator.comparing(Transport::name));
    return found;
  }

  /**
   * The transport named {@code name}; if none is installed by that name, the error names the module
   * to add and the brokers that are installed.
   */
  static Transport named(String name, ClassLoader loader) {
    return named(name, installed(loader));
  }

  /** The transport of {@code installed} named {@code name}, as {@link #named(String, ClassLoader)}. */
  static Transport named(String name, List<Transport> installed) {
    for (Transport t : installed) {
      if (t.name().equals(name)) {
        return t;
      }
    }
    if (name == null || !name.matches("[a-z][a-z0-9-]{0,39}")) { // told back only when it is a name
      throw new IllegalArgumentException("a broker's name is lower case letters, digits and dashes; installed: "
          + names(installed));
    }
    throw new IllegalArgumentException("no broker named '" + name + "' is installed: add the module that provides it"
        + " to the class path (txbox's own are io.txbox:txbox-kafka, -nats, -rabbitmq and -sqs); installed: "
        + names(installed));
  }

  /** The names of {@code transports}, for messages. */
  static List<String> names(List<Transport> transports) {
    return transports.stream().map(Transport::name).toList();
  }
}
