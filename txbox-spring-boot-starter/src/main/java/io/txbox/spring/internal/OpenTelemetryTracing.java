package io.txbox.spring.internal;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.baggage.Baggage;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.txbox.InboxHandler;
import io.txbox.Message;
import io.txbox.spi.OutgoingHeaders;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * OpenTelemetry for txbox, loaded only when the OpenTelemetry API is on the class path. The trace
 * context of the transaction that writes an event goes into the event's headers; the relay's
 * publish span is that context's child and replaces it in the headers; the consumer's handler span
 * is the publish span's child. One trace shows write, publish and handle.
 *
 * <p>Events written outside any trace get no publish span and are not copied: without a trace,
 * tracing costs a lookup of the current context per send and per publish.
 */
public final class OpenTelemetryTracing implements Tracing {
  private static final String SCOPE = "io.txbox";
  private static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
  private static final AttributeKey<String> DESTINATION = AttributeKey.stringKey("messaging.destination.name");
  private static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
  private static final AttributeKey<String> CONSUMER = AttributeKey.stringKey("messaging.consumer.group.name");

  private static final TextMapGetter<Message> HEADERS = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(Message message) {
      return message.headers().keySet();
    }

    @Override
    public String get(Message message, String name) {
      return message == null ? null : message.headers().get(name);
    }
  };

  private final Supplier<OpenTelemetry> openTelemetry;

  /** @param openTelemetry the application's OpenTelemetry, asked for at first use */
  public OpenTelemetryTracing(Supplier<OpenTelemetry> openTelemetry) {
    this.openTelemetry = openTelemetry;
  }

  @Override
  public OutgoingHeaders outgoingHeaders() {
    return () -> {
      Context context = Context.current();
      if (!Span.fromContext(context).getSpanContext().isValid() && Baggage.fromContext(context).isEmpty()) {
        return Map.of();
      }
      Map<String, String> headers = new HashMap<>(4);
      propagator().inject(context, headers, Map::put);
      return headers;
    };
  }

  @Override
  public Publisher publisher(Publisher delegate, String system) {
    return new Publisher() {
      @Override
      public PublishResult publish(List<Message> batch) {
        return publishTraced(delegate, system, batch);
      }

      @Override
      public void close() {
        delegate.close();
      }
    };
  }

  @Override
  public SendScope sendScope() {
    return message -> {
      Context context = propagator().extract(Context.root(), message, HEADERS);
      if (!Span.fromContext(context).getSpanContext().isValid()) {
        return SendScope.NONE.enter(message);
      }
      Scope scope = context.makeCurrent();
      return scope::close;
    };
  }

  @Override
  public InboxHandler handler(String consumer, InboxHandler handler) {
    return (transaction, message, idempotencyKey) -> {
      Context parent = propagator().extract(Context.root(), message, HEADERS);
      Span span = tracer().spanBuilder(message.destination() + " process")
          .setSpanKind(SpanKind.CONSUMER)
          .setParent(parent)
          .setAttribute(DESTINATION, message.destination())
          .setAttribute(MESSAGE_ID, message.id().toString())
          .setAttribute(CONSUMER, consumer)
          .startSpan();
      try (Scope ignored = span.makeCurrent()) {
        handler.handle(transaction, message, idempotencyKey);
      } catch (Exception e) {
        span.recordException(e);
        span.setStatus(StatusCode.ERROR);
        throw e;
      } finally {
        span.end();
      }
    };
  }

  private PublishResult publishTraced(Publisher delegate, String system, List<Message> batch) {
    List<Span> spans = new ArrayList<>(batch.size());
    List<Message> traced = new ArrayList<>(batch.size());
    boolean anyTraced = false;
    for (Message message : batch) {
      Context parent = propagator().extract(Context.root(), message, HEADERS);
      if (!Span.fromContext(parent).getSpanContext().isValid()) {
        spans.add(null);
        traced.add(message);
        continue;
      }
      Span span = tracer().spanBuilder(message.destination() + " publish")
          .setSpanKind(SpanKind.PRODUCER)
          .setParent(parent)
          .setAttribute(SYSTEM, system)
          .setAttribute(DESTINATION, message.destination())
          .setAttribute(MESSAGE_ID, message.id().toString())
          .startSpan();
      Map<String, String> headers = new HashMap<>(4);
      propagator().inject(parent.with(span), headers, Map::put);
      spans.add(span);
      traced.add(message.withHeaders(headers));
      anyTraced = true;
    }
    PublishResult result;
    try {
      result = delegate.publish(anyTraced ? traced : batch);
    } catch (RuntimeException e) { // against the contract, but no span may be left open
      result = PublishResult.allFailed(batch.size(), e);
      endSpans(spans, result);
      throw e;
    }
    endSpans(spans, result);
    return result;
  }

  private static void endSpans(List<Span> spans, PublishResult result) {
    for (int i = 0; i < spans.size(); i++) {
      Span span = spans.get(i);
      if (span != null) {
        if (result.failed(i)) {
          span.recordException(result.failure(i));
          span.setStatus(StatusCode.ERROR);
        }
        span.end();
      }
    }
  }

  private TextMapPropagator propagator() {
    return openTelemetry.get().getPropagators().getTextMapPropagator();
  }

  private Tracer tracer() {
    return openTelemetry.get().getTracer(SCOPE);
  }
}
