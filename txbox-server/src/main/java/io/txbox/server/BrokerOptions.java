package io.txbox.server;

import io.txbox.kafka.KafkaPublisher;
import io.txbox.nats.NatsMessages;
import io.txbox.nats.NatsPublisher;
import io.txbox.rabbitmq.RabbitPublisher;
import io.txbox.spi.Publisher;
import io.txbox.spi.support.Secrets;
import io.txbox.sqs.SqsPublisher;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import picocli.CommandLine.Option;

/** Which broker events go to and how to reach it: shared by {@code txbox relay} and {@code txbox replay}. */
final class BrokerOptions {
  /** The brokers txbox can publish to. */
  enum Broker { kafka, nats, rabbitmq, sqs }

  @Option(names = "--broker", defaultValue = "kafka",
      description = "Where events go: ${COMPLETION-CANDIDATES}. Default: ${DEFAULT-VALUE}.")
  Broker broker;

  @Option(names = "--kafka-bootstrap-servers", description = "Kafka bootstrap.servers; required with --broker kafka.")
  String bootstrapServers;

  @Option(names = "--nats-servers", description = "NATS server URLs, comma-separated (nats://host:4222);"
      + " required with --broker nats.")
  String natsServers;

  @Option(names = "--nats-ack-timeout", converter = DurationConverter.class,
      description = "How long a batch waits for its PubAcks. Default: 10s.")
  Duration natsAckTimeout;

  @Option(names = "--nats-separate-headers", description = "Write txbox's metadata as txbox 0.1 did, in separate"
      + " headers (txbox-type, txbox-version, txbox-key, txbox-created-at, content-type) instead of one txbox"
      + " header, for consumers not yet upgraded; deprecated, removed in the release after next.")
  boolean natsSeparateHeaders;

  @Option(names = "--rabbitmq-uri", description = "RabbitMQ URI (amqp://user:password@host:5672/vhost);"
      + " required with --broker rabbitmq. Messages go to the exchange named by their destination,"
      + " with their key as the routing key.")
  String rabbitUri;

  @Option(names = "--rabbitmq-confirm-timeout", converter = DurationConverter.class,
      description = "How long a batch waits for its publisher confirms. Default: 10s.")
  Duration rabbitConfirmTimeout;

  @Option(names = "--rabbitmq-max-message-size",
      description = "Largest payload in bytes; set it to the broker's max_message_size. Default: 16777216.")
  Integer rabbitMaxMessageSize;

  @Option(names = "--sqs-region", description = "AWS region of the queues, such as eu-west-1. Default: the AWS SDK's"
      + " chain (AWS_REGION, profiles). Credentials come from the SDK's chain too: AWS_ACCESS_KEY_ID and"
      + " AWS_SECRET_ACCESS_KEY, profiles, instance and task roles. Messages go to the queue named by their"
      + " destination; FIFO queues (.fifo) keep each key's order.")
  String sqsRegion;

  @Option(names = "--sqs-endpoint", description = "SQS endpoint URL, for an SQS-compatible server such as"
      + " http://localhost:9324. Default: AWS's endpoint for the region.")
  String sqsEndpoint;

  @Option(names = "--sqs-send-timeout", converter = DurationConverter.class,
      description = "How long one SendMessageBatch request may take, the SDK's retries included. Default: 10s.")
  Duration sqsSendTimeout;

  @Option(names = "--sqs-max-message-size",
      description = "Largest message in bytes, body and attributes: the queues' MaximumMessageSize. Default: 262144.")
  Integer sqsMaxMessageSize;

  @Option(names = "--kafka-property", description = "Extra producer property, name=value; repeatable.")
  Map<String, String> kafkaProperties = new LinkedHashMap<>();

  /** The publisher the options describe; every setting is checked, nothing connects yet. */
  Publisher publisher() {
    return switch (broker) {
      case kafka -> {
        require(bootstrapServers, "--kafka-bootstrap-servers (TXBOX_KAFKA_BOOTSTRAP_SERVERS)");
        KafkaPublisher.Builder kafka = KafkaPublisher.builder().bootstrapServers(bootstrapServers);
        try {
          kafkaProperties.forEach(kafka::property);
          yield kafka.build();
        } catch (IllegalArgumentException e) { // a producer property is no option of its own
          throw new IllegalArgumentException(
              "invalid --kafka-property (TXBOX_KAFKA_PROPERTY): " + Secrets.mask(e.getMessage()), e);
        }
      }
      case nats -> {
        require(natsServers, "--nats-servers (TXBOX_NATS_SERVERS)");
        NatsPublisher.Builder nats = NatsPublisher.builder().servers(natsServers);
        set(natsAckTimeout, nats::ackTimeout);
        if (natsSeparateHeaders) {
          nats.format(separateHeaders());
        }
        try {
          yield nats.build();
        } catch (IllegalArgumentException e) { // name the options, not the builder's settings
          throw new IllegalArgumentException(e.getMessage().replaceFirst("^servers ", "natsServers ")
              .replaceFirst("^ackTimeout ", "natsAckTimeout "), e);
        }
      }
      case rabbitmq -> {
        require(rabbitUri, "--rabbitmq-uri (TXBOX_RABBITMQ_URI)");
        RabbitPublisher.Builder rabbit = RabbitPublisher.builder().uri(rabbitUri);
        set(rabbitConfirmTimeout, rabbit::confirmTimeout);
        set(rabbitMaxMessageSize, rabbit::maxMessageSize);
        try {
          yield rabbit.build();
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(e.getMessage().replaceFirst("^uri ", "rabbitmqUri ")
              .replaceFirst("^confirmTimeout ", "rabbitmqConfirmTimeout ")
              .replaceFirst("^maxMessageSize ", "rabbitmqMaxMessageSize "), e);
        }
      }
      case sqs -> {
        SqsPublisher.Builder sqs = SqsPublisher.builder();
        set(sqsRegion, sqs::region);
        set(sqsEndpoint, sqs::endpoint);
        set(sqsSendTimeout, sqs::sendTimeout);
        set(sqsMaxMessageSize, sqs::maxMessageSize);
        try {
          yield sqs.build();
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(e.getMessage().replaceFirst("^endpoint ", "sqsEndpoint ")
              .replaceFirst("^sendTimeout ", "sqsSendTimeout ")
              .replaceFirst("^maxMessageSize ", "sqsMaxMessageSize "), e);
        }
      }
    };
  }

  @SuppressWarnings("deprecation")
  private static NatsMessages.Format separateHeaders() {
    return NatsMessages.Format.SEPARATE_HEADERS;
  }

  /**
   * Whether the chosen broker's address was given (if blank: it is checked and refused): a command
   * that may publish (console) can do without.
   */
  boolean given() {
    return address() != null;
  }

  /** Checks every setting of the chosen broker, as {@link #publisher()} does, without keeping one. */
  void check() {
    publisher().close(); // builds only: nothing connects before the first publish
  }

  /** The broker and where it is, secrets masked, for logs. */
  String describe() {
    return broker + " " + Secrets.mask(address());
  }

  private String address() {
    return switch (broker) {
      case kafka -> bootstrapServers;
      case nats -> natsServers;
      case rabbitmq -> rabbitUri;
      case sqs -> sqsEndpoint != null ? sqsEndpoint : sqsRegion != null ? sqsRegion : System.getenv("AWS_REGION");
    };
  }

  private void require(String value, String option) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(option + " is required with --broker " + broker);
    }
  }


  private static <T> void set(T value, Consumer<T> setter) {
    if (value != null) {
      setter.accept(value);
    }
  }
}
