package io.txbox.spring.internal;

import io.txbox.spi.Intake;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Subscriber;
import io.txbox.spring.InboxListener;
import io.txbox.spring.TxboxProperties;
import io.txbox.spring.TxboxProperties.Broker;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.springframework.util.ClassUtils;

/** The publisher and subscribers of the broker the application uses. */
public interface BrokerClients {

  /** The broker's name for traces: {@code kafka}, {@code nats}, {@code rabbitmq} or {@code aws_sqs}. */
  String system();

  /** The relay's publisher, entering {@code sendScope} around each message it hands its client. */
  Publisher publisher(SendScope sendScope);

  /** A subscriber (not started) feeding {@code listener}'s sources into {@code intake}. */
  Subscriber subscriber(InboxListener listener, Intake intake);

  /**
   * The clients of {@code txbox.broker}, or of the one broker module on the class path when it is
   * not set. Each broker's clients are in a class of their own, loaded only when chosen.
   */
  static BrokerClients of(TxboxProperties properties, String springKafkaServers) {
    Broker broker = chosen(properties.broker());
    return switch (broker) {
      case KAFKA -> new KafkaClients(properties, springKafkaServers);
      case NATS -> new NatsClients(properties);
      case RABBITMQ -> new RabbitClients(properties);
      case SQS -> new SqsClients(properties);
    };
  }

  private static Broker chosen(Broker configured) {
    Map<Broker, String> modules = Map.of(
        Broker.KAFKA, "io.txbox.kafka.KafkaPublisher",
        Broker.NATS, "io.txbox.nats.NatsPublisher",
        Broker.RABBITMQ, "io.txbox.rabbitmq.RabbitPublisher",
        Broker.SQS, "io.txbox.sqs.SqsPublisher");
    List<Broker> present = new ArrayList<>();
    for (Broker b : Broker.values()) {
      if (ClassUtils.isPresent(modules.get(b), BrokerClients.class.getClassLoader())) {
        present.add(b);
      }
    }
    if (configured != null) {
      if (!present.contains(configured)) {
        throw new IllegalStateException("txbox.broker=" + name(configured) + " needs io.txbox:txbox-"
            + name(configured) + " on the class path: add it to the application's dependencies");
      }
      return configured;
    }
    if (present.size() == 1) {
      return present.get(0);
    }
    if (present.isEmpty()) {
      throw new IllegalStateException("txbox has no broker to relay to: add io.txbox:txbox-kafka,"
          + " txbox-nats, txbox-rabbitmq or txbox-sqs to the application's dependencies, or turn the relay and"
          + " the listeners off with txbox.relay.enabled=false and txbox.inbox.enabled=false");
    }
    throw new IllegalStateException("txbox finds several broker modules on the class path ("
        + present.stream().map(BrokerClients::name).toList() + "): set txbox.broker to the one to use");
  }

  private static String name(Broker broker) {
    return broker.name().toLowerCase(Locale.ROOT);
  }

  /** The one source of a broker that reads from one (a stream, a queue). */
  static String single(InboxListener listener, String what) {
    if (listener.sources().size() != 1) {
      throw new IllegalArgumentException("InboxListener " + listener.consumer() + " reads from one "
          + what + ", but from(...) names " + listener.sources());
    }
    return listener.sources().get(0);
  }
}
