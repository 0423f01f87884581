package io.txbox.spring.internal;

import io.txbox.kafka.KafkaPublisher;
import io.txbox.kafka.KafkaSubscriber;
import io.txbox.spi.Intake;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Subscriber;
import io.txbox.spring.InboxListener;
import io.txbox.spring.TxboxProperties;
import java.util.Map;
import java.util.function.BiConsumer;

/** Kafka clients from {@code txbox.kafka.*}. */
final class KafkaClients implements BrokerClients {
  private final TxboxProperties properties;
  private final String bootstrapServers;

  KafkaClients(TxboxProperties properties, String springKafkaServers) {
    this.properties = properties;
    String configured = properties.kafka().bootstrapServers();
    this.bootstrapServers = configured != null ? configured
        : springKafkaServers != null ? springKafkaServers : "localhost:9092";
  }

  @Override
  public String system() {
    return "kafka";
  }

  @Override
  public Publisher publisher(SendScope sendScope) {
    KafkaPublisher.Builder b = KafkaPublisher.builder().bootstrapServers(bootstrapServers).sendScope(sendScope);
    each(properties.kafka().producer(), b::property);
    return Settings.build("txbox.kafka", b::build);
  }

  @Override
  public Subscriber subscriber(InboxListener listener, Intake intake) {
    KafkaSubscriber.Builder b = KafkaSubscriber.builder(intake)
        .bootstrapServers(bootstrapServers)
        .topics(listener.sources().toArray(String[]::new))
        .concurrency(listener.concurrency())
        .retryPolicy(listener.retryPolicy())
        .whenExhausted(listener.whenExhausted())
        .drainTimeout(properties.inbox().drainTimeout())
        .batchSize(properties.inbox().batchSize());
    each(properties.kafka().consumer(), b::property);
    return Settings.build("txbox.kafka", b::build);
  }

  private static void each(Map<String, String> settings, BiConsumer<String, String> set) {
    if (settings != null) {
      settings.forEach(set);
    }
  }
}
