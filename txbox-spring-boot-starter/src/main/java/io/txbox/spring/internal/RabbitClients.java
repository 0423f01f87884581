package io.txbox.spring.internal;

import io.txbox.rabbitmq.RabbitPublisher;
import io.txbox.rabbitmq.RabbitSubscriber;
import io.txbox.spi.Intake;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Subscriber;
import io.txbox.spring.InboxListener;
import io.txbox.spring.TxboxProperties;

/** RabbitMQ clients from {@code txbox.rabbitmq.*}. */
final class RabbitClients implements BrokerClients {
  private final TxboxProperties properties;

  RabbitClients(TxboxProperties properties) {
    this.properties = properties;
  }

  @Override
  public String system() {
    return "rabbitmq";
  }

  @Override
  public Publisher publisher(SendScope sendScope) {
    return Settings.build("txbox.rabbitmq", () -> RabbitPublisher.builder()
        .sendScope(sendScope)
        .uri(properties.rabbitmq().uri())
        .confirmTimeout(properties.rabbitmq().confirmTimeout())
        .build());
  }

  @Override
  public Subscriber subscriber(InboxListener listener, Intake intake) {
    String queue = BrokerClients.single(listener, "RabbitMQ queue");
    return Settings.build("txbox.rabbitmq", () -> RabbitSubscriber.builder(intake)
        .uri(properties.rabbitmq().uri())
        .queue(queue)
        .concurrency(listener.concurrency())
        .retryPolicy(listener.retryPolicy())
        .whenExhausted(listener.whenExhausted())
        .drainTimeout(properties.inbox().drainTimeout())
        .batchSize(properties.inbox().batchSize())
        .build());
  }
}
