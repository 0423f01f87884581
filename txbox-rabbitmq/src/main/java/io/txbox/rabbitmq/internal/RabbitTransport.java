package io.txbox.rabbitmq.internal;

import io.txbox.rabbitmq.RabbitPublisher;
import io.txbox.rabbitmq.RabbitSubscriber;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Subscriber;
import io.txbox.spi.Transport;
import io.txbox.spi.TransportSetting;
import io.txbox.spi.TransportSetting.Kind;
import io.txbox.spi.TransportSetting.Role;
import io.txbox.spi.TransportSettings;
import java.util.List;

/** RabbitMQ as the Spring starter and the {@code txbox} command find it: {@code --broker rabbitmq}. */
public final class RabbitTransport implements Transport {
  private static final List<TransportSetting> SETTINGS = List.of(
      new TransportSetting("uri", Kind.TEXT, Role.ADDRESS, "amqp://guest:guest@localhost:5672",
          "RabbitMQ URI (amqp://user:password@host:5672/vhost). Messages go to the exchange named by their"
              + " destination, with their key as the routing key."),
      new TransportSetting("confirm-timeout", Kind.DURATION, Role.PUBLISHER, null,
          "How long a batch waits for its publisher confirms. Default: 10s."),
      new TransportSetting("max-message-size", Kind.INTEGER, Role.PUBLISHER, null,
          "Largest payload in bytes; set it to the broker's max_message_size. Default: 16777216."));

  /** For {@link java.util.ServiceLoader}. */
  public RabbitTransport() {}

  @Override
  public String name() {
    return "rabbitmq";
  }

  @Override
  public List<TransportSetting> settings() {
    return SETTINGS;
  }

  @Override
  public Publisher publisher(TransportSettings settings, SendScope sendScope) {
    RabbitPublisher.Builder b = RabbitPublisher.builder().sendScope(sendScope);
    settings.text("uri").ifPresent(b::uri);
    settings.duration("confirm-timeout").ifPresent(b::confirmTimeout);
    settings.integer("max-message-size").ifPresent(b::maxMessageSize);
    return settings.build(b::build);
  }

  @Override
  public Subscriber subscriber(TransportSettings settings, Subscription subscription) {
    RabbitSubscriber.Builder b = RabbitSubscriber.builder(subscription.intake())
        .queue(subscription.single("RabbitMQ queue"))
        .subscription(subscription);
    settings.text("uri").ifPresent(b::uri);
    return settings.build(b::build);
  }
}
