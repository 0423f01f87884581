package io.txbox.spi;

import java.util.Map;

/**
 * Headers the {@link io.txbox.Outbox} adds to every message it writes, taken from the writing
 * thread: the W3C trace context ({@code traceparent}, {@code tracestate}, {@code baggage}) of the
 * transaction that wrote the event, so that its relay and consumers join the same trace. A header
 * the message already has is kept.
 *
 * <pre>{@code
 * OutgoingHeaders trace = () -> {
 *   Map<String, String> headers = new HashMap<>();
 *   propagator.inject(Context.current(), headers, Map::put);
 *   return headers;
 * };
 * Outbox outbox = Outbox.builder(store).headers(trace).build();
 * }</pre>
 */
@FunctionalInterface
public interface OutgoingHeaders {

  /** No headers. */
  OutgoingHeaders NONE = Map::of;

  /** The headers for messages written now, on this thread; empty when there are none. */
  Map<String, String> current();
}
