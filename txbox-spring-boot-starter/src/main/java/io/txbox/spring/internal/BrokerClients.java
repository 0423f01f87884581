package io.txbox.spring.internal;

import io.txbox.spi.Intake;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Subscriber;
import io.txbox.spi.TransactionalPublisher;
import io.txbox.spi.Transport;
import io.txbox.spi.TransportSetting;
import io.txbox.spi.TransportSettings;
import io.txbox.spring.InboxListener;
import io.txbox.spring.TxboxProperties;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

/**
 * The publisher and subscribers of the broker the application uses: the {@link Transport} named by
 * {@code txbox.broker}, or the one on the class path, with its settings from
 * {@code txbox.<broker>.*}. The starter names no broker: a broker module registers its transport.
 */
public final class BrokerClients {
  private final Transport transport;
  private final TransportSettings settings;
  private final TxboxProperties properties;

  private BrokerClients(Transport transport, TransportSettings settings, TxboxProperties properties) {
    this.transport = transport;
    this.settings = settings;
    this.properties = properties;
  }

  /** The clients of {@code txbox.broker}, or of the one broker module on the class path when it is not set. */
  public static BrokerClients of(TxboxProperties properties, Environment environment) {
    Transport transport = chosen(properties.broker());
    String prefix = "txbox." + transport.name();
    Map<String, String> given = given(transport, Binder.get(environment)
        .bind(prefix, Bindable.mapOf(String.class, String.class)).orElse(Map.of()));
    String springKafka = environment.getProperty("spring.kafka.bootstrap-servers");
    if (transport.name().equals("kafka") && springKafka != null) { // Spring Boot's own Kafka setting is honoured
      given.putIfAbsent("bootstrap-servers", springKafka);
    }
    TransportSettings settings = new TransportSettings(transport, given, setting -> prefix + "." + setting);
    return new BrokerClients(transport, settings, properties);
  }

  /** The broker's name for traces: {@code kafka}, {@code nats}, {@code rabbitmq} or {@code aws_sqs}. */
  public String system() {
    return transport.system();
  }

  /** The relay's publisher, entering {@code sendScope} around each message it hands its client. */
  public Publisher publisher(SendScope sendScope) {
    return transport.publisher(settings, sendScope);
  }

  /** The relay's publisher for exactly-once delivery; the broker refuses when it cannot. */
  public TransactionalPublisher exactlyOncePublisher(SendScope sendScope) {
    return transport.exactlyOncePublisher(settings, sendScope);
  }

  /** A subscriber (not started) feeding {@code listener}'s sources into {@code intake}. */
  public Subscriber subscriber(InboxListener listener, Intake intake) {
    Transport.Subscription subscription = new Transport.Subscription(intake, listener.sources(),
        listener.concurrency(), listener.retryPolicy(), listener.whenExhausted(), properties.inbox().drainTimeout(),
        properties.inbox().batchSize());
    try {
      return transport.subscriber(settings, subscription);
    } catch (IllegalArgumentException e) { // the two shared settings that come from txbox.inbox.*
      String refused = String.valueOf(e.getMessage());
      if (refused.startsWith("drainTimeout ") || refused.startsWith("batchSize ")) {
        throw Settings.refused("txbox.inbox", e);
      }
      throw new IllegalArgumentException("InboxListener " + listener.consumer() + ": " + refused, e);
    }
  }

  private static Transport chosen(String configured) {
    ClassLoader loader = BrokerClients.class.getClassLoader();
    if (configured != null) {
      try {
        return Transport.named(configured.trim().toLowerCase(Locale.ROOT), loader);
      } catch (IllegalArgumentException e) {
        throw new IllegalStateException("txbox setting refused, change txbox.broker: " + e.getMessage(), e);
      }
    }
    List<Transport> installed = Transport.installed(loader);
    if (installed.size() == 1) {
      return installed.get(0);
    }
    if (installed.isEmpty()) {
      throw new IllegalStateException("txbox has no broker to relay to: add io.txbox:txbox-kafka,"
          + " txbox-nats, txbox-rabbitmq or txbox-sqs to the application's dependencies, or turn the relay and"
          + " the listeners off with txbox.relay.enabled=false and txbox.inbox.enabled=false");
    }
    throw new IllegalStateException("txbox finds several broker modules on the class path ("
        + Transport.names(installed) + "): set txbox.broker to the one to use");
  }

  /**
   * The bound {@code txbox.<broker>.*} entries by setting name. Spring binds a map's keys as they
   * were written ({@code ack-timeout}, {@code acktimeout} from {@code TXBOX_NATS_ACKTIMEOUT},
   * {@code ack.timeout} from {@code TXBOX_NATS_ACK_TIMEOUT}): each is matched to its setting by
   * its letters and digits alone, as Spring's relaxed binding matches properties.
   */
  private static Map<String, String> given(Transport transport, Map<String, String> bound) {
    Map<String, String> given = new LinkedHashMap<>();
    bound.forEach((key, value) -> given.put(settingName(transport, key), value));
    return given;
  }

  private static String settingName(Transport transport, String key) {
    for (TransportSetting s : transport.settings()) {
      String letters = s.name().replace("-", "");
      if (s.kind() == TransportSetting.Kind.PROPERTIES && key.startsWith(s.name() + ".")) {
        return key;
      }
      if (letters.equals(key.replace("-", "").replace(".", "").toLowerCase(Locale.ROOT))) {
        return s.name();
      }
    }
    return key; // refused by TransportSettings, named as written
  }
}
