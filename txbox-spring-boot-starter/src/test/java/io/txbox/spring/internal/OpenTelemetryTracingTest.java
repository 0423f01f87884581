package io.txbox.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.txbox.Message;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class OpenTelemetryTracingTest {
  private final InMemorySpanExporter spans = InMemorySpanExporter.create();
  private final OpenTelemetry otel = OpenTelemetrySdk.builder()
      .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
      .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
      .build();
  private final OpenTelemetryTracing tracing = new OpenTelemetryTracing(() -> otel);

  @Test
  void aFailedEventsPublishSpanEndsWithTheErrorAndTheBrokerSeesThePublishSpanInItsHeaders() {
    Message traced = writtenInATrace();
    AtomicReference<List<Message>> sent = new AtomicReference<>();
    Publisher broker = publisher(batch -> {
      sent.set(batch);
      return PublishResult.of(batch.size(), Map.of(0, new IllegalStateException("broker refused")));
    });

    tracing.publisher(broker, "kafka").publish(List.of(traced));

    SpanData publish = publishSpan();
    assertThat(publish.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(sent.get().get(0).headers().get("traceparent")).contains(publish.getSpanId());
  }

  @Test
  void aPublisherThatThrowsLeavesNoSpanOpen() {
    Publisher broken = publisher(batch -> {
      throw new IllegalStateException("a bug in the publisher");
    });

    assertThatThrownBy(() -> tracing.publisher(broken, "kafka").publish(List.of(writtenInATrace())))
        .hasMessage("a bug in the publisher");
    assertThat(publishSpan().getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
  }

  @Test
  void anEventWrittenOutsideATraceIsPassedOnAsItIsWithoutASpan() {
    Message untraced = Message.builder().type("T").destination("orders").payload(new byte[0]).build();
    AtomicReference<List<Message>> sent = new AtomicReference<>();
    tracing.publisher(publisher(batch -> {
      sent.set(batch);
      return PublishResult.allAcknowledged(batch.size());
    }), "kafka").publish(List.of(untraced));

    assertThat(sent.get().get(0)).isSameAs(untraced);
    assertThat(spans.getFinishedSpanItems()).isEmpty();
  }

  private Message writtenInATrace() {
    Span write = otel.getTracer("test").spanBuilder("write").startSpan();
    try (Scope ignored = write.makeCurrent()) {
      return Message.builder().type("T").destination("orders").payload(new byte[0])
          .headers(tracing.outgoingHeaders().current()).build();
    } finally {
      write.end();
    }
  }

  private SpanData publishSpan() {
    return spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals("orders publish"))
        .findFirst().orElseThrow();
  }

  private static Publisher publisher(java.util.function.Function<List<Message>, PublishResult> publish) {
    return new Publisher() {
      @Override
      public PublishResult publish(List<Message> batch) {
        return publish.apply(batch);
      }

      @Override
      public void close() {}
    };
  }
}
