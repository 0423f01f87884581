package io.txbox.examples.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.testkit.JdkNeutral;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.LocalPorts;
import io.txbox.testkit.TestDatabase;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;
import org.springframework.context.Lifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A real Prometheus (Debian's {@code prometheus} package, which {@code .ci/run} installs) scrapes
 * the Spring order service every second and evaluates {@code ops/prometheus/txbox-alerts.yml}:
 * proof that the rules read the meters by the names Micrometer's Prometheus registry gives them.
 * The rules' {@code for} durations are cut to a second, so that a test need not wait minutes;
 * their expressions are the file's. Skipped where no {@code prometheus} binary exists, except in CI.
 */
@JdkNeutral
@SpringBootTest(classes = SpringOrderService.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"txbox.relay.idle-interval=50ms", "txbox.metrics.backlog-refresh=1s"})
@AutoConfigureObservability(tracing = false) // tests turn metrics export off unless asked
@Import(PrometheusAlertsTest.DropSchemaOnClose.class)
@DirtiesContext
class PrometheusAlertsTest {
  private static final String TOPIC = "prometheus-orders-" + UUID.randomUUID();
  private static final Path RULES = Path.of("..", "ops", "prometheus", "txbox-alerts.yml");
  private static final Path DASHBOARD = Path.of("..", "ops", "grafana", "txbox-dashboard.json");
  private static final Path RELAY_METERS =
      Path.of("..", "txbox-micrometer", "src", "main", "java", "io", "txbox", "micrometer", "RelayMeters.java");
  private static final Pattern METRIC = Pattern.compile("\\btxbox_[a-z_]+");
  /** Tagged with the error's class, so it exists from the first failed publish on. */
  private static final String FIRST_FAILURE_ON = "txbox_relay_failures_by_error_total";
  private static TestDatabase db;
  private static Path prometheus;
  private final HttpClient http = HttpClient.newHttpClient();
  private final ObjectMapper json = new ObjectMapper();
  private Process server;
  private int prometheusPort;

  @LocalServerPort int port;
  @Autowired ApplicationContext context;

  @BeforeAll
  static void findPrometheusAndCreateTopic() {
    prometheus = onPath("prometheus").orElse(null);
    assumeTrue(prometheus != null || "true".equals(System.getenv("CI")),
        "no prometheus binary on the PATH (apt-get install prometheus); CI requires one");
    KafkaBroker.shared().createTopic(TOPIC, 3);
    db = TestDatabase.create();
  }

  @DynamicPropertySource
  static void connections(DynamicPropertyRegistry properties) {
    properties.add("spring.datasource.url", TestDatabase::jdbcUrl);
    properties.add("txbox.schema", () -> db.schema());
    properties.add("shop.schema", () -> db.schema());
    properties.add("shop.topic", () -> TOPIC);
    properties.add("txbox.kafka.bootstrap-servers", () -> KafkaBroker.shared().bootstrapServers());
  }

  /** Drops the schema after the relay and the listener stopped. */
  static class DropSchemaOnClose {
    @Bean(destroyMethod = "close")
    TestDatabase shopDatabase() {
      return db;
    }
  }

  @AfterEach
  void stopPrometheus() throws InterruptedException {
    if (server != null) {
      server.destroy();
      server.waitFor();
    }
  }

  @Test
  void theRelayDownAlertFiresOnceTheRelayStopsWithEventsWaitingAndNotBefore(@TempDir Path dir) throws Exception {
    startPrometheus(dir);
    assertThat(post("/orders?sku=sku-1&quantity=1")).isEqualTo(200);
    await().atMost(Duration.ofSeconds(60)).until(() -> query("sum(txbox_relay_buckets_owned)") > 0
        && query("max(txbox_outbox_pending)") == 0);
    assertThat(query("count(txbox_outbox_oldest_pending_age_seconds)")).isEqualTo(1);
    assertThat(alert("TxboxRelayDown")).as("a relay holds the buckets").isEmpty();

    Lifecycle relay = context.getBean("txboxRelay", Lifecycle.class);
    relay.stop();
    JsonNode firing;
    try {
      for (int i = 0; i < 3; i++) {
        assertThat(post("/orders?sku=sku-2&quantity=1")).isEqualTo(200);
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> alert("TxboxRelayDown")
          .filter(a -> a.path("state").asText().equals("firing")).isPresent());
      firing = alert("TxboxRelayDown").orElseThrow();
    } finally {
      relay.start(); // the other test needs it
    }
    assertThat(firing.path("labels").path("subscription").asText()).isEqualTo("default");
    assertThat(firing.path("labels").path("severity").asText()).isEqualTo("page");
    assertThat(firing.path("annotations").path("runbook").asText()).isEqualTo("docs/runbook.md#txboxrelaydown");
  }

  @Test
  void everyDashboardQueryIsValidPromQlOverMetricsTheServiceExports(@TempDir Path dir) throws Exception {
    startPrometheus(dir);
    assertThat(post("/orders?sku=sku-4&quantity=1")).isEqualTo(200);
    await().atMost(Duration.ofSeconds(60)).until(() -> query("sum(txbox_inbox_processed_total)") >= 1
        && query("count(txbox_relay_lag_seconds)") > 0);
    String scraped = get("/actuator/prometheus");

    List<String> expressions = new ArrayList<>();
    json.readTree(DASHBOARD.toFile()).path("panels").forEach(panel -> panel.path("targets")
        .forEach(target -> expressions.add(target.path("expr").asText())));
    assertThat(expressions).hasSizeGreaterThan(10);
    for (String expr : expressions) {
      JsonNode answer = api("/api/v1/query?query="
          + URLEncoder.encode(expr.replace("$__rate_interval", "1m"), StandardCharsets.UTF_8));
      assertThat(answer.path("status").asText()).as("%s: %s", expr, answer).isEqualTo("success");
      Matcher names = METRIC.matcher(expr);
      while (names.find()) {
        if (names.group().equals(FIRST_FAILURE_ON)) {
          assertThat(Files.readString(RELAY_METERS)).as("the relay's failure counter").contains("\"txbox.relay.failures.by.error\"");
          continue;
        }
        assertThat(scraped).as("metric %s of %s", names.group(), expr).contains("\n" + names.group());
      }
    }
  }

  private void startPrometheus(Path dir) throws IOException {
    assertThat(prometheus).as("prometheus binary (CI installs Debian's prometheus package)").isNotNull();
    String rules = Files.readString(RULES).replaceAll("(?m)^(\\s+)for: .*$", "$1for: 1s");
    Files.writeString(dir.resolve("rules.yml"), rules);
    Files.writeString(dir.resolve("prometheus.yml"), """
        global:
          scrape_interval: 1s
          evaluation_interval: 1s
        rule_files: [rules.yml]
        scrape_configs:
          - job_name: order-service
            metrics_path: /actuator/prometheus
            static_configs:
              - targets: ['127.0.0.1:%d']
        """.formatted(port));
    prometheusPort = LocalPorts.free();
    server = new ProcessBuilder(prometheus.toString(), "--config.file=" + dir.resolve("prometheus.yml"),
        "--storage.tsdb.path=" + dir.resolve("data"), "--web.listen-address=127.0.0.1:" + prometheusPort)
        .redirectErrorStream(true).redirectOutput(dir.resolve("prometheus.log").toFile()).start();
    await().atMost(Duration.ofSeconds(30)).until(() -> LocalPorts.listening(prometheusPort));
  }

  /** The value of an instant query returning one series, or NaN when it returns none. */
  private double query(String promql) throws Exception {
    JsonNode result = api("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8))
        .path("data").path("result");
    return result.isEmpty() ? Double.NaN : result.get(0).path("value").get(1).asDouble();
  }

  /** The alert named {@code name}, pending or firing, if Prometheus has one. */
  private Optional<JsonNode> alert(String name) throws Exception {
    JsonNode alerts = api("/api/v1/alerts").path("data").path("alerts");
    return StreamSupport.stream(alerts.spliterator(), false)
        .filter(a -> a.path("labels").path("alertname").asText().equals(name)).findFirst();
  }

  private JsonNode api(String path) throws Exception {
    HttpResponse<String> response = http.send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + prometheusPort + path)).build(), HttpResponse.BodyHandlers.ofString());
    return json.readTree(response.body());
  }

  private String get(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString()).body();
  }

  private int post(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  private static Optional<Path> onPath(String program) {
    return Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
        .map(d -> Path.of(d, program)).filter(Files::isExecutable).findFirst();
  }
}
