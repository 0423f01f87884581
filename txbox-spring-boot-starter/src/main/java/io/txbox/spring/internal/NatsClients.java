package io.txbox.spring.internal;

import io.txbox.nats.NatsMessages;
import io.txbox.nats.NatsPublisher;
import io.txbox.nats.NatsSubscriber;
import io.txbox.spi.Intake;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Subscriber;
import io.txbox.spring.InboxListener;
import io.txbox.spring.TxboxProperties;

/** NATS JetStream clients from {@code txbox.nats.*}. */
final class NatsClients implements BrokerClients {
  private final TxboxProperties properties;

  NatsClients(TxboxProperties properties) {
    this.properties = properties;
  }

  @Override
  public String system() {
    return "nats";
  }

  @Override
  public Publisher publisher(SendScope sendScope) {
    return Settings.build("txbox.nats", () -> NatsPublisher.builder()
        .sendScope(sendScope)
        .servers(properties.nats().servers())
        .ackTimeout(properties.nats().ackTimeout())
        .format(format())
        .build());
  }

  @SuppressWarnings("deprecation")
  private NatsMessages.Format format() {
    return properties.nats().separateHeaders() ? NatsMessages.Format.SEPARATE_HEADERS : NatsMessages.Format.PACKED;
  }

  @Override
  public Subscriber subscriber(InboxListener listener, Intake intake) {
    String stream = BrokerClients.single(listener, "JetStream stream");
    return Settings.build("txbox.nats", () -> NatsSubscriber.builder(intake)
        .servers(properties.nats().servers())
        .stream(stream)
        .concurrency(listener.concurrency())
        .retryPolicy(listener.retryPolicy())
        .whenExhausted(listener.whenExhausted())
        .drainTimeout(properties.inbox().drainTimeout())
        .batchSize(properties.inbox().batchSize())
        .build());
  }
}
