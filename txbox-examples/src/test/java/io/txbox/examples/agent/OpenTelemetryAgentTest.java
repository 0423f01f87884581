package io.txbox.examples.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.examples.spring.SpringOrderService;
import io.txbox.testkit.ChildProcess;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.LocalPorts;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Spring order service under the OpenTelemetry Java agent, as its users run it: one trace
 * holds the HTTP request that wrote the order, txbox's publish span and the inventory listener's
 * process span. The agent's logging exporter prints the spans; the test reads them.
 */
class OpenTelemetryAgentTest {
  private static final Path AGENT = Path.of("target", "otel", "opentelemetry-javaagent.jar");
  private static final HttpClient http = HttpClient.newHttpClient();

  @Test
  void oneTraceShowsTheRequestThePublishAndTheHandler(@TempDir Path dir) throws Exception {
    assertThat(AGENT).as("copied by the build's generate-test-resources phase").exists();
    String topic = "agent-orders-" + UUID.randomUUID();
    KafkaBroker.shared().createTopic(topic, 1);
    int port = LocalPorts.free();
    Path output = dir.resolve("service.log");
    try (TestDatabase db = TestDatabase.create()) {
      Process service = ChildProcess.start(List.of(
              "-Xmx384m",
              "-javaagent:" + AGENT.toAbsolutePath(),
              "-Dotel.service.name=order-service",
              "-Dotel.traces.exporter=logging",
              "-Dotel.metrics.exporter=none",
              "-Dotel.logs.exporter=none",
              "-Dotel.bsp.schedule.delay=100"),
          SpringOrderService.class.getName(), List.of(
              "--server.port=" + port,
              "--spring.datasource.url=" + TestDatabase.jdbcUrl(),
              "--txbox.schema=" + db.schema(),
              "--shop.schema=" + db.schema(),
              "--shop.topic=" + topic,
              "--txbox.kafka.bootstrap-servers=" + KafkaBroker.shared().bootstrapServers(),
              "--txbox.relay.idle-interval=50ms"),
          output);
      try {
        await().atMost(Duration.ofSeconds(120)).until(() -> Files.readString(output).contains("Started SpringOrderService"));
        HttpResponse<String> placed = http.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/orders?sku=sku-1&quantity=1"))
                .POST(HttpRequest.BodyPublishers.noBody()).build(),
            HttpResponse.BodyHandlers.ofString());
        assertThat(placed.statusCode()).isEqualTo(200);

        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
          String log = Files.readString(output);
          String trace = traceOf(log, "'POST /orders'");
          assertThat(traceOf(log, "'" + topic + " publish'.*?PRODUCER \\[tracer: io.txbox")).isEqualTo(trace);
          assertThat(traceOf(log, "'" + topic + " process'.*?CONSUMER \\[tracer: io.txbox")).isEqualTo(trace);
        });
      } finally {
        service.destroy();
        service.waitFor();
      }
    }
  }

  /** The trace id of the first span the logging exporter printed whose line matches {@code span}. */
  private static String traceOf(String log, String span) {
    Matcher m = Pattern.compile(span.replace("'", "'") + "").matcher(log);
    assertThat(m.find()).as("a span %s in the service's output", span).isTrue();
    Matcher id = Pattern.compile(" : ([0-9a-f]{32}) ").matcher(log.substring(m.start()));
    assertThat(id.find()).isTrue();
    return id.group(1);
  }
}
