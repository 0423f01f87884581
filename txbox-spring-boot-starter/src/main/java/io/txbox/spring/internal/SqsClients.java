package io.txbox.spring.internal;

import io.txbox.spi.Intake;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Subscriber;
import io.txbox.spring.InboxListener;
import io.txbox.spring.TxboxProperties;
import io.txbox.sqs.SqsPublisher;
import io.txbox.sqs.SqsSubscriber;

/** Amazon SQS clients from {@code txbox.sqs.*}. */
final class SqsClients implements BrokerClients {
  private final TxboxProperties properties;
  private final TxboxProperties.Sqs sqs;

  SqsClients(TxboxProperties properties) {
    this.properties = properties;
    this.sqs = properties.sqs();
  }

  @Override
  public String system() {
    return "aws_sqs"; // OpenTelemetry's messaging.system for SQS
  }

  /**
   * The relay's publisher. It enters no send scope: one request carries ten messages, so there is
   * no one trace for the SDK's call to join; each message's own trace headers travel as attributes.
   */
  @Override
  public Publisher publisher(SendScope sendScope) {
    return Settings.build("txbox.sqs", () -> {
      SqsPublisher.Builder b = SqsPublisher.builder().sendTimeout(sqs.sendTimeout());
      if (sqs.region() != null) {
        b.region(sqs.region());
      }
      if (sqs.endpoint() != null) {
        b.endpoint(sqs.endpoint());
      }
      if (sqs.accessKeyId() != null || sqs.secretAccessKey() != null) {
        b.credentials(sqs.accessKeyId(), sqs.secretAccessKey());
      }
      return b.build();
    });
  }

  @Override
  public Subscriber subscriber(InboxListener listener, Intake intake) {
    String queue = BrokerClients.single(listener, "SQS queue");
    return Settings.build("txbox.sqs", () -> {
      SqsSubscriber.Builder b = SqsSubscriber.builder(intake)
          .queue(queue)
          .concurrency(listener.concurrency())
          .visibilityTimeout(sqs.visibilityTimeout())
          .waitTime(sqs.waitTime())
          .retryPolicy(listener.retryPolicy())
          .whenExhausted(listener.whenExhausted())
          .batchSize(properties.inbox().batchSize())
          .drainTimeout(properties.inbox().drainTimeout());
      if (sqs.region() != null) {
        b.region(sqs.region());
      }
      if (sqs.endpoint() != null) {
        b.endpoint(sqs.endpoint());
      }
      if (sqs.accessKeyId() != null || sqs.secretAccessKey() != null) {
        b.credentials(sqs.accessKeyId(), sqs.secretAccessKey());
      }
      return b.build();
    });
  }
}
