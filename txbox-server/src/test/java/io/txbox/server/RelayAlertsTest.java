package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.micrometer.BacklogMeters;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.JdkNeutral;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.LocalPorts;
import io.txbox.testkit.PgBouncer;
import io.txbox.testkit.TestDatabase;
import java.io.File;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The repository's alert rules ({@code ops/prometheus/txbox-alerts.yml}, every {@code for} cut to
 * one second, five for a process down or an absent relay, and the open-transaction age that pages
 * cut to two seconds)
 * in a real Prometheus that scrapes standalone relays ({@code txbox relay}, as
 * processes) and, beside each, what an application that only writes exports: its outbox's backlog
 * gauges. Each case of the operator drill fires the alert it should, and only that one.
 */
@JdkNeutral
class RelayAlertsTest {
  private static final Path RULES = Path.of("..", "ops", "prometheus", "txbox-alerts.yml");
  private static Path prometheus;
  private final HttpClient http = HttpClient.newHttpClient();
  private final ObjectMapper json = new ObjectMapper();
  private final List<AutoCloseable> closing = new ArrayList<>();
  private final KafkaBroker kafka = KafkaBroker.shared();
  private Process server;
  private int prometheusPort;
  @TempDir Path dir;

  @BeforeAll
  static void findPrometheus() {
    prometheus = Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
        .map(d -> Path.of(d, "prometheus")).filter(Files::isExecutable).findFirst().orElse(null);
    assumeTrue(prometheus != null || "true".equals(System.getenv("CI")),
        "no prometheus binary on the PATH (apt-get install prometheus); CI requires one");
  }

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.destroy();
      server.waitFor();
    }
    for (int i = closing.size() - 1; i >= 0; i--) {
      closing.get(i).close();
    }
  }

  /** One service's outbox: its schema, a writer that exports the backlog gauges, and its topic. */
  private final class Service implements AutoCloseable {
    final TestDatabase db = TestDatabase.create();
    final PostgresOutboxStore store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build();
    final String topic = "alerts-" + UUID.randomUUID();
    final OpsEndpoint writer;

    Service(KafkaBroker broker) {
      store.migrate();
      broker.createTopic(topic, 2);
      PrometheusMeterRegistry registry = HttpOptions.registry();
      HttpOptions.bindProcessMeters(registry, store.operator().outboxName());
      BacklogMeters.builder(store.relay()).refresh(Duration.ofSeconds(1)).build().bindTo(registry);
      writer = OpsEndpoint.start(new InetSocketAddress("127.0.0.1", 0), registry,
          () -> OpsEndpoint.Verdict.of(true, "writer", "up"), () -> OpsEndpoint.Verdict.of(true, "writer", "up"));
      closing.add(this);
    }

    List<String> relayArgs(KafkaBroker broker) {
      return List.of("--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema(),
          "--kafka-bootstrap-servers", broker.bootstrapServers(), "--idle-interval", "20ms",
          "--heartbeat-interval", "250ms", "--lease-duration", "2s",
          "--kafka-producer", "delivery.timeout.ms=3000", "--kafka-producer", "request.timeout.ms=1000",
          "--kafka-producer", "max.block.ms=1000");
    }

    void write(int events, String destination, int payloadBytes) throws Exception {
      Outbox outbox = Outbox.create(store.writer());
      for (int i = 0; i < events; i++) {
        try (Connection c = db.dataSource().getConnection()) {
          c.setAutoCommit(false);
          outbox.send(c, Message.builder().type("Test").destination(destination).key("key-" + i % 8)
              .payload("x".repeat(payloadBytes).getBytes(StandardCharsets.UTF_8)).build());
          c.commit();
        }
      }
    }

    @Override
    public void close() {
      writer.close();
      db.close();
    }
  }

  @Test
  void aHealthyRelayAtTwentyFiveEventsASecondFiresNothing() throws Exception {
    Service shop = new Service(kafka);
    RelayProcesses relays = relays();
    relays.start(dir, shop.relayArgs(kafka));
    startPrometheus(Map.of("shop", shop.writer.port(), "shop-relay", OpsClient.of(relays, 0).port()));
    await().atMost(Duration.ofSeconds(60)).until(() -> query("sum(txbox_relay_buckets_owned)") == 64);
    // Until the relay's first scrape no relay exported anything, which is TxboxRelayAbsent (its 5 s
    // here): it must end at the next evaluation after the series came, before "healthy" is watched.
    await().atMost(Duration.ofSeconds(10)).until(() -> !alertNames().contains("TxboxRelayAbsent"));
    // Healthy for ten evaluations of the rules, each of whose "for" is a second here, rather than
    // for a fixed time: a loaded machine's slower Prometheus gets as many chances to misfire.
    Set<String> seen = new TreeSet<>();
    double start = ruleEvaluations();
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (ruleEvaluations() < start + 10 || query("max(txbox_relay_published_total)") <= 100) {
      assertThat(System.nanoTime()).as("ten rule evaluations and 100 events within 60 s").isLessThan(deadline);
      shop.write(5, shop.topic, 100); // 25 a second, give or take the inserts' own time
      Thread.sleep(200);
      seen.addAll(firingNames());
    }
    assertThat(query("max(txbox_relay_published_total)")).isGreaterThan(100);
    assertThat(seen).as("alerts firing while healthy").isEmpty();
    assertThat(alertNames()).as("alerts pending at the end").doesNotContain("TxboxRelayDown");
  }

  @FaultDrill
  @Test
  void aKilledRelayIsAProcessDownAndTheEventsItLeftARelayDown() throws Exception {
    Service shop = new Service(kafka);
    RelayProcesses relays = relays();
    Process relay = relays.start(dir, shop.relayArgs(kafka));
    startPrometheus(Map.of("shop", shop.writer.port(), "shop-relay", OpsClient.of(relays, 0).port()));
    await().atMost(Duration.ofSeconds(60)).until(() -> query("sum(txbox_relay_buckets_owned)") == 64);
    relay.destroyForcibly(); // SIGKILL: no drain, nothing exported any more
    relay.waitFor();
    shop.write(3, shop.topic, 10);
    JsonNode down = firing("TxboxProcessDown");
    assertThat(down.path("labels").path("job").asText()).isEqualTo("shop-relay");
    JsonNode relayDown = firing("TxboxRelayDown");
    assertThat(relayDown.path("labels").path("outbox").asText()).isEqualTo(shop.store.operator().outboxName());
    assertThat(relayDown.path("annotations").path("runbook").asText()).isEqualTo("docs/runbook.md#txboxrelaydown");
    JsonNode absent = firing("TxboxRelayAbsent"); // its series ended with it
    assertThat(absent.path("labels").path("subscription").asText()).isEqualTo("default");
  }

  @Test
  void aRelayThatNeverStartedIsAbsentThoughNothingWaits() throws Exception {
    Service shop = new Service(kafka); // the application exports its backlog: nothing pending
    startPrometheus(Map.of("shop", shop.writer.port()));
    await().atMost(Duration.ofSeconds(30)).until(() -> query("max(txbox_outbox_pending)") == 0);
    JsonNode absent = firing("TxboxRelayAbsent");
    assertThat(absent.path("annotations").path("runbook").asText()).isEqualTo("docs/runbook.md#txboxrelayabsent");
    assertThat(alertNames()).as("nothing waits: no relay down").doesNotContain("TxboxRelayDown");
  }

  @Test
  void eventsHeldBackByAnOpenTransactionAreNoRelayDown() throws Exception {
    Service shop = new Service(kafka);
    RelayProcesses relays = relays();
    relays.start(dir, shop.relayArgs(kafka));
    startPrometheus(Map.of("shop", shop.writer.port(), "shop-relay", OpsClient.of(relays, 0).port()));
    await().atMost(Duration.ofSeconds(60)).until(() -> query("sum(txbox_relay_buckets_owned)") == 64);
    try (Connection open = shop.db.dataSource().getConnection()) {
      open.setAutoCommit(false);
      try (var s = open.createStatement()) {
        s.execute("SELECT pg_current_xact_id()"); // holds the horizon: later commits wait for it
      }
      shop.write(5, shop.topic, 10);
      await().atMost(Duration.ofSeconds(30)).until(() -> query("max(txbox_outbox_pending)") >= 5);
      // Eight evaluations at for: 1s, and not once pending: the relay is alive and holds its buckets.
      await().during(Duration.ofSeconds(8)).atMost(Duration.ofSeconds(12))
          .until(() -> !alertNames().contains("TxboxRelayDown"));
      JsonNode holding = firing("TxboxTransactionHoldingDelivery"); // its 2 minutes cut to 2 s here
      assertThat(holding.path("labels").path("outbox").asText()).isEqualTo(shop.store.operator().outboxName());
      open.rollback();
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> query("max(txbox_outbox_pending)") == 0);
    await().atMost(Duration.ofSeconds(30)).until(() -> !alertNames().contains("TxboxTransactionHoldingDelivery"));
  }

  @Test
  void twoServicesWhoseSubscriptionsShareANameDoNotHideEachOthersRelayOutage() throws Exception {
    Service shop = new Service(kafka);
    Service billing = new Service(kafka);
    RelayProcesses relays = relays();
    Process shopRelay = relays.start(dir, shop.relayArgs(kafka));
    relays.start(dir, billing.relayArgs(kafka));
    Map<String, Integer> targets = new LinkedHashMap<>();
    targets.put("shop", shop.writer.port());
    targets.put("shop-relay", OpsClient.of(relays, 0).port());
    targets.put("billing", billing.writer.port());
    targets.put("billing-relay", OpsClient.of(relays, 1).port());
    startPrometheus(targets);
    await().atMost(Duration.ofSeconds(60)).until(() -> query("sum(txbox_relay_buckets_owned)") == 128);
    shopRelay.destroy(); // SIGTERM: a clean stop, its buckets given back, and no relay takes them
    shopRelay.waitFor();
    shop.write(3, shop.topic, 10);
    billing.write(3, billing.topic, 10);
    JsonNode relayDown = firing("TxboxRelayDown");
    assertThat(relayDown.path("labels").path("outbox").asText()).isEqualTo(shop.store.operator().outboxName());
    assertThat(relayDown.path("labels").path("subscription").asText()).isEqualTo("default");
    assertThat(alerts("TxboxRelayDown")).as("billing's relay runs").hasSize(1);
  }

  @FaultDrill
  @Test
  void aBrokerOutageFiresPublishFailingAndNotRelayDown() throws Exception {
    KafkaBroker own = KafkaBroker.start("384m");
    closing.add(own);
    Service shop = new Service(own);
    RelayProcesses relays = relays();
    relays.start(dir, shop.relayArgs(own));
    startPrometheus(Map.of("shop", shop.writer.port(), "shop-relay", OpsClient.of(relays, 0).port()));
    await().atMost(Duration.ofSeconds(60)).until(() -> query("sum(txbox_relay_buckets_owned)") == 64);
    shop.write(5, shop.topic, 10);
    await().atMost(Duration.ofSeconds(30)).until(() -> query("sum(txbox_relay_published_total)") == 5);
    own.stop();
    try {
      shop.write(5, shop.topic, 10);
      JsonNode failing = firing("TxboxRelayPublishFailing");
      assertThat(failing.path("labels").path("outbox").asText()).isEqualTo(shop.store.operator().outboxName());
      // A few more evaluations: the relay is alive and holds its buckets.
      await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(6)).until(() ->
          !alertNames().contains("TxboxRelayDown") && !firingNames().contains("TxboxProcessDown"));
    } finally {
      own.restart();
    }
  }

  @FaultDrill
  @Test
  void theOnlyRelayOfAnOutboxDyingPagesThoughAnotherServicesRelayRunsInTheSameJob() throws Exception {
    Service shop = new Service(kafka);
    Service billing = new Service(kafka);
    RelayProcesses relays = relays();
    Process shopRelay = relays.start(dir, shop.relayArgs(kafka));
    relays.start(dir, billing.relayArgs(kafka));
    // One job for both relays, as Kubernetes pod-annotation scraping makes it.
    startPrometheusJobs(Map.of("pods", List.of(OpsClient.of(relays, 0).port(), OpsClient.of(relays, 1).port())));
    await().atMost(Duration.ofSeconds(60)).until(() -> query("sum(txbox_relay_buckets_owned)") == 128);
    shopRelay.destroyForcibly();
    shopRelay.waitFor();
    JsonNode down = firing("TxboxProcessDown");
    assertThat(down.path("labels").path("outbox").asText()).isEqualTo(shop.store.operator().outboxName());
    assertThat(down.path("labels").path("severity").asText()).as("billing's relay keeps none of the shop's alerts")
        .isEqualTo("page");
    assertThat(alerts("TxboxProcessDown")).as("billing's relay runs").hasSize(1);
  }

  @Test
  void aNewServiceWhoseRelayNeverStartedIsAbsentThoughAnotherServicesRelayRuns() throws Exception {
    Service shop = new Service(kafka); // its application exports the backlog; its relay never came
    Service billing = new Service(kafka);
    RelayProcesses relays = relays();
    relays.start(dir, billing.relayArgs(kafka));
    startPrometheus(Map.of("shop", shop.writer.port(), "billing-relay", OpsClient.of(relays, 0).port()));
    await().atMost(Duration.ofSeconds(60)).until(() -> query("sum(txbox_relay_buckets_owned)") == 64);
    // Before the first scrapes nothing at all is exported, which fires the alert without an outbox
    // for a moment: wait for the shop's own.
    await().atMost(Duration.ofSeconds(90)).until(() -> alerts("TxboxRelayAbsent").stream().anyMatch(a ->
        a.path("state").asText().equals("firing")
            && a.path("labels").path("outbox").asText().equals(shop.store.operator().outboxName())));
    assertThat(alerts("TxboxRelayAbsent")).as("billing's relay runs")
        .noneMatch(a -> a.path("labels").path("outbox").asText().equals(billing.store.operator().outboxName()));
  }

  /**
   * The relay's database (here its pooler) goes away: the relay answers its scrapes from the last
   * figures read, says the database is unreachable, and is no process down.
   */
  @FaultDrill
  @Test
  void aDatabaseOutageIsNoProcessDownTheRelayAnswersItsScrapesAndSaysTheDatabaseIsUnreachable() throws Exception {
    Service shop = new Service(kafka);
    PgBouncer pooler = PgBouncer.start(PgBouncer.Mode.SESSION, "127.0.0.1", 5432, 10);
    closing.add(pooler);
    List<String> args = new ArrayList<>(shop.relayArgs(kafka));
    args.set(args.indexOf("--jdbc-url") + 1, TestDatabase.throughPooler(pooler));
    RelayProcesses relays = relays();
    relays.start(dir, args);
    startPrometheus(Map.of("shop-relay", OpsClient.of(relays, 0).port()));
    await().atMost(Duration.ofSeconds(60)).until(() -> query("sum(txbox_relay_buckets_owned)") == 64);
    pooler.close(); // the database is gone for the relay
    await().atMost(Duration.ofSeconds(60)).until(() -> query("max(txbox_outbox_database_unreachable)") == 1);
    // Past TxboxProcessDown's 5 s here: Prometheus still scrapes the relay.
    await().during(Duration.ofSeconds(8)).atMost(Duration.ofSeconds(12)).until(() ->
        !alertNames().contains("TxboxProcessDown") && query("min(up)") == 1);
  }

  @Test
  void anEventTheBrokerRefusesForItsSizeFiresTheDeadLetterAlert() throws Exception {
    Service shop = new Service(kafka);
    String small = "alerts-small-" + UUID.randomUUID();
    kafka.createTopic(small, 1, Map.of("max.message.bytes", "2000"));
    RelayProcesses relays = relays();
    relays.start(dir, shop.relayArgs(kafka));
    startPrometheus(Map.of("shop", shop.writer.port(), "shop-relay", OpsClient.of(relays, 0).port()));
    await().atMost(Duration.ofSeconds(60)).until(() -> query("sum(txbox_relay_buckets_owned)") == 64);
    shop.write(1, small, 5000);
    JsonNode dead = firing("TxboxOutboxDeadLetters");
    assertThat(dead.path("labels").path("outbox").asText()).isEqualTo(shop.store.operator().outboxName());
    assertThat(alertNames()).doesNotContain("TxboxRelayDown", "TxboxRelayPublishFailing");
  }

  private RelayProcesses relays() {
    RelayProcesses relays = new RelayProcesses();
    closing.add(relays);
    return relays;
  }

  private void startPrometheus(Map<String, Integer> targets) throws Exception {
    Map<String, List<Integer>> jobs = new LinkedHashMap<>();
    targets.forEach((job, port) -> jobs.put(job, List.of(port)));
    startPrometheusJobs(jobs);
  }

  /** A Prometheus scraping each job's targets, several to a job as pod-annotation scraping has them. */
  private void startPrometheusJobs(Map<String, List<Integer>> targets) throws Exception {
    assertThat(prometheus).as("prometheus binary (CI installs Debian's prometheus package)").isNotNull();
    // Every "for" cut to 1 s, but TxboxProcessDown's to 5 s: a single scrape that outlasts its
    // 1 s timeout on a loaded machine must not count as a process down.
    // TxboxRelayAbsent's (5m) too: until a relay's first scrape, no relay exports anything.
    String rules = Files.readString(RULES).replaceAll("(?m)^(\\s+)for: (1m|5m)$", "$1for: 5s")
        .replaceAll("(?m)^(\\s+)for: (?!5s$).*$", "$1for: 1s")
        .replace("open_transaction_age_seconds) > 60", "open_transaction_age_seconds) > 2");
    Files.writeString(dir.resolve("rules.yml"), rules);
    StringBuilder config = new StringBuilder("""
        global:
          scrape_interval: 1s
          evaluation_interval: 1s
        rule_files: [rules.yml]
        scrape_configs:
        """);
    targets.forEach((job, ports) -> config.append("""
          - job_name: %s
            static_configs:
              - targets: [%s]
        """.formatted(job, String.join(", ", ports.stream().map(p -> "'127.0.0.1:" + p + "'").toList()))));
    Files.writeString(dir.resolve("prometheus.yml"), config.toString());
    prometheusPort = LocalPorts.free();
    server = new ProcessBuilder(prometheus.toString(), "--config.file=" + dir.resolve("prometheus.yml"),
        "--storage.tsdb.path=" + dir.resolve("data"), "--web.listen-address=127.0.0.1:" + prometheusPort)
        .redirectErrorStream(true).redirectOutput(dir.resolve("prometheus.log").toFile()).start();
    // It listens before it has loaded its data and rules, and answers 503 "Service Unavailable" until then.
    await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> http.send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + prometheusPort + "/-/ready")).build(), HttpResponse.BodyHandlers.discarding())
        .statusCode() == 200);
  }

  /** Waits for {@code name} to fire; with every {@code for} at one second, within seconds of its cause. */
  private JsonNode firing(String name) throws Exception {
    await().atMost(Duration.ofSeconds(90)).until(() -> alerts(name).stream()
        .anyMatch(a -> a.path("state").asText().equals("firing")));
    return alerts(name).stream().filter(a -> a.path("state").asText().equals("firing")).findFirst().orElseThrow();
  }

  /** How many times Prometheus has evaluated txbox's rules, from its own metrics. */
  private double ruleEvaluations() throws Exception {
    String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + prometheusPort + "/metrics"))
        .build(), HttpResponse.BodyHandlers.ofString()).body();
    java.util.regex.Matcher m = java.util.regex.Pattern.compile(
        "(?m)^prometheus_rule_group_iterations_total\\{[^}]*rule_group=\"[^\"]*;txbox\"[^}]*} (\\S+)$").matcher(metrics);
    return m.find() ? Double.parseDouble(m.group(1)) : 0;
  }

  /** The names of the alerts firing now. */
  private Set<String> firingNames() throws Exception {
    Set<String> names = new TreeSet<>();
    api("/api/v1/alerts").path("data").path("alerts").forEach(a -> {
      if (a.path("state").asText().equals("firing")) {
        names.add(a.path("labels").path("alertname").asText());
      }
    });
    return names;
  }

  /** The names of the alerts pending or firing now. */
  private Set<String> alertNames() throws Exception {
    Set<String> names = new TreeSet<>();
    api("/api/v1/alerts").path("data").path("alerts").forEach(a -> names.add(a.path("labels").path("alertname").asText()));
    return names;
  }

  private List<JsonNode> alerts(String name) throws Exception {
    JsonNode alerts = api("/api/v1/alerts").path("data").path("alerts");
    return StreamSupport.stream(alerts.spliterator(), false)
        .filter(a -> a.path("labels").path("alertname").asText().equals(name)).toList();
  }

  /** The value of an instant query returning one series, or NaN when it returns none. */
  private double query(String promql) throws Exception {
    JsonNode result = api("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8))
        .path("data").path("result");
    return result.isEmpty() ? Double.NaN : result.get(0).path("value").get(1).asDouble();
  }

  private JsonNode api(String path) throws Exception {
    HttpResponse<String> response = http.send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + prometheusPort + path)).build(), HttpResponse.BodyHandlers.ofString());
    return json.readTree(response.body());
  }
}
