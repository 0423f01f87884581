package io.txbox.spi;

import io.txbox.Message;

/**
 * What a publisher enters around handing each message to its broker client, and leaves right
 * after. For tracing: with the message's trace context current while the client sends, the client's
 * own instrumentation (the OpenTelemetry Java agent's Kafka, RabbitMQ or NATS spans) joins the
 * message's trace, and the trace headers it writes continue that trace instead of starting one.
 *
 * <pre>{@code
 * SendScope trace = message -> {
 *   Scope scope = propagator.extract(Context.root(), message, fromHeaders).makeCurrent();
 *   return scope::close;
 * };
 * KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers("kafka:9092").sendScope(trace).build();
 * }</pre>
 */
@FunctionalInterface
public interface SendScope {

  /** Enters nothing. */
  SendScope NONE = message -> () -> {};

  /** Enters the scope of sending {@code message}; the publisher closes it once the client took it. */
  Entered enter(Message message);

  /** A scope entered; closing it must not throw. */
  @FunctionalInterface
  interface Entered extends AutoCloseable {
    @Override
    void close();
  }
}
