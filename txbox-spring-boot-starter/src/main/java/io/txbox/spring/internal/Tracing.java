package io.txbox.spring.internal;

import io.txbox.InboxHandler;
import io.txbox.spi.OutgoingHeaders;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;

/**
 * Where txbox meets the application's tracing: none, or {@link OpenTelemetryTracing} when the
 * OpenTelemetry API is present. Kept free of OpenTelemetry types so that the starter loads
 * without them.
 */
public interface Tracing {

  /** No tracing: nothing added, nothing wrapped. */
  Tracing NONE = new Tracing() {
    @Override
    public OutgoingHeaders outgoingHeaders() {
      return OutgoingHeaders.NONE;
    }

    @Override
    public Publisher publisher(Publisher delegate, String system) {
      return delegate;
    }

    @Override
    public SendScope sendScope() {
      return SendScope.NONE;
    }

    @Override
    public InboxHandler handler(String consumer, InboxHandler handler) {
      return handler;
    }
  };

  /** The writing thread's trace context and baggage, for the outbox to add to each event. */
  OutgoingHeaders outgoingHeaders();

  /** {@code delegate}, with a producer span for each traced event, ended at its acknowledgement. */
  Publisher publisher(Publisher delegate, String system);

  /**
   * The trace context of each message made current while the broker client sends it, so that the
   * client's own instrumentation (the Java agent's) continues the message's trace.
   */
  SendScope sendScope();

  /** {@code handler}, inside a consumer span that is the child of the event's publish span. */
  InboxHandler handler(String consumer, InboxHandler handler);
}
