package io.txbox.sqs.internal;

import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Subscriber;
import io.txbox.spi.Transport;
import io.txbox.spi.TransportSetting;
import io.txbox.spi.TransportSetting.Kind;
import io.txbox.spi.TransportSetting.Role;
import io.txbox.spi.TransportSettings;
import io.txbox.sqs.SqsPublisher;
import io.txbox.sqs.SqsSubscriber;
import java.util.List;
import java.util.Optional;

/**
 * Amazon SQS as the Spring starter and the {@code txbox} command find it: {@code --broker sqs}. It
 * has no one address: the region and the endpoint both default to the AWS SDK's chain.
 */
public final class SqsTransport implements Transport {
  private static final List<TransportSetting> SETTINGS = List.of(
      new TransportSetting("region", Kind.TEXT, Role.CLIENTS, null,
          "AWS region of the queues, such as eu-west-1. Default: the AWS SDK's chain (AWS_REGION, profiles)."
              + " Messages go to the queue named by their destination; FIFO queues (.fifo) keep each key's order."),
      new TransportSetting("endpoint", Kind.TEXT, Role.CLIENTS, null,
          "SQS endpoint URL, for an SQS-compatible server such as http://localhost:9324. Default: AWS's"
              + " endpoint for the region."),
      new TransportSetting("access-key-id", Kind.TEXT, Role.CREDENTIAL, null,
          "AWS access key id, with secret-access-key. Default: the AWS SDK's chain (AWS_ACCESS_KEY_ID,"
              + " profiles, instance and task roles)."),
      new TransportSetting("secret-access-key", Kind.TEXT, Role.CREDENTIAL, null,
          "AWS secret access key, with access-key-id. Default: the AWS SDK's chain."),
      new TransportSetting("send-timeout", Kind.DURATION, Role.PUBLISHER, null,
          "How long one SendMessageBatch request may take, the SDK's retries included. Default: 10s."),
      new TransportSetting("max-message-size", Kind.INTEGER, Role.PUBLISHER, null,
          "Largest message in bytes, body and attributes: the queues' MaximumMessageSize. Default: 262144."),
      new TransportSetting("visibility-timeout", Kind.DURATION, Role.SUBSCRIBER, null,
          "How long a received message stays hidden from other receivers while it is handled. Default: 30s."),
      new TransportSetting("wait-time", Kind.DURATION, Role.SUBSCRIBER, null,
          "Long-poll wait of one receive, at most 20s. Default: 10s."));

  /** For {@link java.util.ServiceLoader}. */
  public SqsTransport() {}

  @Override
  public String name() {
    return "sqs";
  }

  @Override
  public String system() {
    return "aws_sqs"; // OpenTelemetry's messaging.system for SQS
  }

  @Override
  public List<TransportSetting> settings() {
    return SETTINGS;
  }

  /** The endpoint, else the region, else the region the SDK's chain starts with. */
  @Override
  public Optional<String> where(TransportSettings settings) {
    return settings.text("endpoint").or(() -> settings.text("region"))
        .or(() -> Optional.ofNullable(System.getenv("AWS_REGION")));
  }

  /**
   * The relay's publisher. It enters no send scope: one request carries ten messages, so there is
   * no one trace for the SDK's call to join; each message's own trace headers travel as attributes.
   */
  @Override
  public Publisher publisher(TransportSettings settings, SendScope sendScope) {
    SqsPublisher.Builder b = SqsPublisher.builder();
    settings.text("region").ifPresent(b::region);
    settings.text("endpoint").ifPresent(b::endpoint);
    credentials(settings, b::credentials);
    settings.duration("send-timeout").ifPresent(b::sendTimeout);
    settings.integer("max-message-size").ifPresent(b::maxMessageSize);
    return settings.build(b::build);
  }

  @Override
  public Subscriber subscriber(TransportSettings settings, Subscription subscription) {
    SqsSubscriber.Builder b = SqsSubscriber.builder(subscription.intake())
        .queue(subscription.single("SQS queue"))
        .subscription(subscription);
    settings.text("region").ifPresent(b::region);
    settings.text("endpoint").ifPresent(b::endpoint);
    credentials(settings, b::credentials);
    settings.duration("visibility-timeout").ifPresent(b::visibilityTimeout);
    settings.duration("wait-time").ifPresent(b::waitTime);
    return settings.build(b::build);
  }

  private static void credentials(TransportSettings settings, Credentials credentials) {
    if (settings.given("access-key-id") || settings.given("secret-access-key")) {
      credentials.set(settings.text("access-key-id").orElse(null), settings.text("secret-access-key").orElse(null));
    }
  }

  /** Either builder's {@code credentials}. */
  private interface Credentials {
    Object set(String accessKeyId, String secretAccessKey);
  }
}
