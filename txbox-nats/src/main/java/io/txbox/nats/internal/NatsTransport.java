package io.txbox.nats.internal;

import io.txbox.nats.NatsMessages;
import io.txbox.nats.NatsPublisher;
import io.txbox.nats.NatsSubscriber;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Subscriber;
import io.txbox.spi.Transport;
import io.txbox.spi.TransportSetting;
import io.txbox.spi.TransportSetting.Kind;
import io.txbox.spi.TransportSetting.Role;
import io.txbox.spi.TransportSettings;
import java.util.List;

/** NATS JetStream as the Spring starter and the {@code txbox} command find it: {@code --broker nats}. */
public final class NatsTransport implements Transport {
  private static final List<TransportSetting> SETTINGS = List.of(
      new TransportSetting("servers", Kind.TEXT, Role.ADDRESS, "nats://localhost:4222",
          "NATS server URLs, comma-separated (nats://host:4222)."),
      new TransportSetting("ack-timeout", Kind.DURATION, Role.PUBLISHER, null,
          "How long a batch waits for its PubAcks. Default: 10s."),
      new TransportSetting("separate-headers", Kind.FLAG, Role.PUBLISHER, null,
          "Write txbox's metadata as txbox 0.1 did, in separate headers (txbox-type, txbox-version, txbox-key,"
              + " txbox-created-at, content-type) instead of one txbox header, for consumers not yet upgraded;"
              + " deprecated, removed in the release after next. Default: false."));

  /** For {@link java.util.ServiceLoader}. */
  public NatsTransport() {}

  @Override
  public String name() {
    return "nats";
  }

  @Override
  public List<TransportSetting> settings() {
    return SETTINGS;
  }

  @Override
  public Publisher publisher(TransportSettings settings, SendScope sendScope) {
    NatsPublisher.Builder b = NatsPublisher.builder().sendScope(sendScope);
    settings.text("servers").ifPresent(b::servers);
    settings.duration("ack-timeout").ifPresent(b::ackTimeout);
    if (settings.flag("separate-headers")) {
      b.format(separateHeaders());
    }
    return settings.build(b::build);
  }

  @SuppressWarnings("deprecation")
  private static NatsMessages.Format separateHeaders() {
    return NatsMessages.Format.SEPARATE_HEADERS;
  }

  @Override
  public Subscriber subscriber(TransportSettings settings, Subscription subscription) {
    NatsSubscriber.Builder b = NatsSubscriber.builder(subscription.intake())
        .stream(subscription.single("JetStream stream"))
        .subscription(subscription);
    settings.text("servers").ifPresent(b::servers);
    return settings.build(b::build);
  }
}
