package io.txbox.kafka.internal;

import io.txbox.kafka.KafkaExactlyOncePublisher;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.kafka.KafkaSubscriber;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Subscriber;
import io.txbox.spi.TransactionalPublisher;
import io.txbox.spi.Transport;
import io.txbox.spi.TransportSetting;
import io.txbox.spi.TransportSetting.Kind;
import io.txbox.spi.TransportSetting.Role;
import io.txbox.spi.TransportSettings;
import io.txbox.spi.support.Secrets;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;

/** Kafka as the Spring starter and the {@code txbox} command find it: {@code --broker kafka}. */
public final class KafkaTransport implements Transport {
  private static final List<TransportSetting> SETTINGS = List.of(
      new TransportSetting("bootstrap-servers", Kind.TEXT, Role.ADDRESS, "localhost:9092",
          "Kafka's bootstrap.servers, host:port, comma-separated."),
      new TransportSetting("producer", Kind.PROPERTIES, Role.PUBLISHER, null,
          "Extra producer properties, name=value, several separated by commas (linger.ms, security settings);"
              + " checked against the Kafka client's own; those that guard delivery are refused."),
      new TransportSetting("transactional-id-prefix", Kind.TEXT, Role.PUBLISHER,
          KafkaExactlyOncePublisher.DEFAULT_TRANSACTIONAL_ID_PREFIX,
          "Exactly-once delivery only: the start of each relay's transactional id and of the progress topic's name"
              + " (<prefix>progress.<subscription>). Give each outbox that shares a Kafka cluster its own."),
      new TransportSetting("consumer", Kind.PROPERTIES, Role.SUBSCRIBER, null,
          "Extra consumer properties, name=value (group.instance.id, security settings, fetch sizes);"
              + " checked against the Kafka client's own; those that guard delivery are refused."));

  /** For {@link java.util.ServiceLoader}. */
  public KafkaTransport() {}

  @Override
  public String name() {
    return "kafka";
  }

  @Override
  public List<TransportSetting> settings() {
    return SETTINGS;
  }

  @Override
  public Publisher publisher(TransportSettings settings, SendScope sendScope) {
    KafkaPublisher.Builder b = KafkaPublisher.builder().sendScope(sendScope);
    settings.text("bootstrap-servers").ifPresent(b::bootstrapServers);
    properties(settings, "producer", b::property);
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw refused(settings, "producer", ProducerConfig.configNames(), e);
    }
  }

  @Override
  public TransactionalPublisher exactlyOncePublisher(TransportSettings settings, SendScope sendScope) {
    KafkaExactlyOncePublisher.Builder b = KafkaExactlyOncePublisher.builder().sendScope(sendScope);
    settings.text("bootstrap-servers").ifPresent(b::bootstrapServers);
    settings.text("transactional-id-prefix").ifPresent(b::transactionalIdPrefix);
    properties(settings, "producer", b::property);
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw refused(settings, "producer", ProducerConfig.configNames(), e);
    }
  }

  @Override
  public Subscriber subscriber(TransportSettings settings, Subscription subscription) {
    KafkaSubscriber.Builder b = KafkaSubscriber.builder(subscription.intake())
        .topics(subscription.sources().toArray(String[]::new))
        .subscription(subscription);
    settings.text("bootstrap-servers").ifPresent(b::bootstrapServers);
    properties(settings, "consumer", b::property);
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw refused(settings, "consumer", ConsumerConfig.configNames(), e);
    }
  }

  /**
   * The builder names Kafka's own properties ({@code acks must be all ...}): told as the setting
   * that set them, values masked. Anything else (no topics) is the front end's to name.
   */
  private static IllegalArgumentException refused(TransportSettings settings, String clientSetting,
      Set<String> clientProperties, IllegalArgumentException e) {
    String message = String.valueOf(e.getMessage());
    if (e instanceof ClientProperties.Refused) { // unknown name or bad value, as the client judges it
      return settings.refused(clientSetting, Secrets.mask(message));
    }
    String first = message.split(" ", 2)[0];
    if (first.equals("bootstrap.servers")) {
      return settings.refused("bootstrap-servers", message);
    }
    boolean aClientProperty = clientProperties.contains(first) || e instanceof NumberFormatException;
    return aClientProperty ? settings.refused(clientSetting, Secrets.mask(message)) : e;
  }

  /** Hands the client properties on; one the builder refuses is told as the setting, its value masked. */
  private static void properties(TransportSettings settings, String setting, BiConsumer<String, String> property) {
    try {
      settings.properties(setting).forEach(property);
    } catch (IllegalArgumentException e) { // a client property is no setting of txbox's own
      throw settings.refused(setting, Secrets.mask(e.getMessage()));
    }
  }
}
