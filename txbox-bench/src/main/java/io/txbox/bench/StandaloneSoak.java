package io.txbox.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.LocalPorts;
import io.txbox.testkit.ServerProcess;
import java.io.File;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The soak with the standalone relay and nothing else: {@code txbox relay} as its own process runs
 * the relay and its janitor; the writers write; the table's size is sampled from the database, the
 * acks and the relay's lag percentiles from its {@code /metrics}. A real Prometheus, when one is on
 * the PATH, scrapes the relay every 5 s with the repository's alert rules; at the end the alerts
 * that fired during the run and the dashboard's queries are recorded.
 */
final class StandaloneSoak {
  private static final Pattern PUBLISHED = Pattern.compile("(?m)^txbox_relay_published_total\\{[^}]*} (\\S+)$");
  private static final Path RULES = Path.of("ops", "prometheus", "txbox-alerts.yml");
  private static final Path DASHBOARD = Path.of("ops", "grafana", "txbox-dashboard.json");
  private final Soak soak;
  private final HttpClient http = HttpClient.newHttpClient();

  StandaloneSoak(Soak soak) {
    this.soak = soak;
  }

  Integer call() throws Exception {
    String command = "java -jar txbox-bench/target/txbox-bench.jar soak --standalone txbox-server/target/txbox.jar"
        + (soak.partitionSize == 0 ? "" : " --partition-size " + soak.partitionSize);
    Results results = new Results(soak.partitionSize == 0 ? "soak-standalone" : "soak-standalone-partitioned", command);
    results.setting("minutes", soak.minutes);
    results.setting("rate", soak.rate);
    results.setting("retention", soak.retention.toString());
    results.setting("janitorInterval", soak.janitorInterval.toString());
    results.setting("relay", "txbox relay as its own process (its janitor, its /metrics); nothing else");
    results.setting("partitionSize", soak.partitionSize);
    soak.stampCommits = false;
    List<Soak.Sample> samples = new ArrayList<>();
    Path work = Files.createTempDirectory("txbox-soak");
    try (BenchDatabase db = new BenchDatabase(soak.jdbcUrl, 8); KafkaBroker kafka = KafkaBroker.start("1g")) {
      kafka.createTopic("soak", 8);
      // Partitioned here once; the relay's janitor keeps the partitions from then on.
      PostgresOutboxStore store = db.store().outboxPartitionSize(soak.partitionSize).build();
      store.migrate();
      results.setting("autovacuum", db.setting("autovacuum"));
      int port = LocalPorts.free();
      Process relay = startRelay(work, kafka, port);
      Process prometheus = startPrometheus(work, port);
      try {
        AtomicBoolean writing = new AtomicBoolean(true);
        List<Thread> writers = soak.startWriters(db.dataSource, Outbox.create(store.writer()), writing);
        long start = System.nanoTime();
        long end = start + Duration.ofMinutes(soak.minutes).toNanos();
        long nextSample = start + Duration.ofSeconds(soak.sampleSeconds).toNanos();
        long lastWritten = 0;
        double lastAcked = 0;
        while (System.nanoTime() < end) {
          LockSupport.parkNanos(nextSample - System.nanoTime());
          String metrics = get("http://127.0.0.1:" + port + "/metrics");
          double acked = published(metrics);
          Soak.Sample s = soak.sample(db, store, (System.nanoTime() - start) / 60e9,
              soak.written.get() - lastWritten, (long) (acked - lastAcked),
              lag(metrics, "0.5"), lag(metrics, "0.99"));
          lastWritten = soak.written.get();
          lastAcked = acked;
          samples.add(s);
          Soak.print(s, samples.size() == 1);
          nextSample += Duration.ofSeconds(soak.sampleSeconds).toNanos();
        }
        writing.set(false);
        for (Thread w : writers) {
          w.join();
        }
        if (prometheus != null) {
          recordAlertsAndDashboard(results);
        }
      } finally {
        relay.destroy();
        relay.waitFor();
        if (prometheus != null) {
          prometheus.destroy();
          prometheus.waitFor();
        }
      }
    }
    soak.summarize(results, samples);
    results.setting("samples", samples);
    results.publish(Path.of("txbox-bench", "results"));
    return 0;
  }

  private Process startRelay(Path work, KafkaBroker kafka, int port) throws Exception {
    List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m",
        "-jar", soak.standalone.toString(), "relay", "--jdbc-url", soak.jdbcUrl, "--schema", BenchDatabase.SCHEMA,
        "--kafka-bootstrap-servers", kafka.bootstrapServers(), "--outbox-retention", soak.retention.toSeconds() + "s",
        "--janitor-interval", soak.janitorInterval.toSeconds() + "s", "--http-address", "127.0.0.1",
        "--http-port", Integer.toString(port));
    Process relay = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(work.resolve("relay.log").toFile()).start();
    ServerProcess.awaitLogLine(relay, work.resolve("relay.log"), 0, "metrics and health at", port,
        Duration.ofSeconds(60), "txbox relay");
    System.out.println("relay log: " + work.resolve("relay.log"));
    return relay;
  }

  private Process startPrometheus(Path work, int relayPort) throws Exception {
    Path binary = Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
        .map(d -> Path.of(d, "prometheus")).filter(Files::isExecutable).findFirst().orElse(null);
    if (binary == null) {
      System.out.println("no prometheus on the PATH: the run is not scraped");
      return null;
    }
    Files.copy(RULES, work.resolve("rules.yml"));
    Files.writeString(work.resolve("prometheus.yml"), """
        global:
          scrape_interval: 5s
          evaluation_interval: 5s
        rule_files: [rules.yml]
        scrape_configs:
          - job_name: txbox-relay
            static_configs:
              - targets: ['127.0.0.1:%d']
        """.formatted(relayPort));
    prometheusPort = LocalPorts.free();
    Process p = new ProcessBuilder(binary.toString(), "--config.file=" + work.resolve("prometheus.yml"),
        "--storage.tsdb.path=" + work.resolve("data"), "--web.listen-address=127.0.0.1:" + prometheusPort)
        .redirectErrorStream(true).redirectOutput(work.resolve("prometheus.log").toFile()).start();
    System.out.println("prometheus at http://127.0.0.1:" + prometheusPort);
    return p;
  }

  private int prometheusPort;

  /** The alerts that were pending or firing at any time of the run, and whether each dashboard query answered. */
  private void recordAlertsAndDashboard(Results results) throws Exception {
    ObjectMapper json = new ObjectMapper();
    String window = (soak.minutes + 1) + "m";
    JsonNode fired = query(json, "max_over_time(ALERTS[" + window + "])");
    List<String> alerts = new ArrayList<>();
    fired.forEach(a -> alerts.add(a.path("metric").path("alertname").asText() + " " + a.path("metric").path("alertstate").asText()));
    results.setting("alertsDuringTheRun", alerts);
    Map<String, Integer> dashboard = new TreeMap<>();
    json.readTree(DASHBOARD.toFile()).path("panels").forEach(panel -> panel.path("targets").forEach(target -> {
      String expr = target.path("expr").asText().replace("$__rate_interval", "1m");
      try {
        dashboard.put(panel.path("title").asText() + ": " + expr, query(json, expr).size());
      } catch (Exception e) {
        dashboard.put(panel.path("title").asText() + ": " + expr, -1);
      }
    }));
    results.setting("dashboardQueriesSeriesReturned", dashboard);
    results.add("alerts pending or firing during the run", alerts.size(), "alerts");
    System.out.println("alerts during the run: " + alerts);
  }

  private JsonNode query(ObjectMapper json, String promql) throws Exception {
    JsonNode answer = json.readTree(get("http://127.0.0.1:" + prometheusPort + "/api/v1/query?query="
        + URLEncoder.encode(promql, StandardCharsets.UTF_8)));
    if (!answer.path("status").asText().equals("success")) {
      throw new IllegalStateException(promql + ": " + answer);
    }
    return answer.path("data").path("result");
  }

  private static double published(String metrics) {
    double total = 0;
    Matcher m = PUBLISHED.matcher(metrics);
    while (m.find()) {
      total += Double.parseDouble(m.group(1));
    }
    return total;
  }

  /** The relay's lag percentile in milliseconds, from its decaying histogram. */
  private static double lag(String metrics, String quantile) {
    Matcher m = Pattern.compile("(?m)^txbox_relay_lag_seconds\\{[^}]*quantile=\"" + Pattern.quote(quantile)
        + "\"[^}]*} (\\S+)$").matcher(metrics);
    return m.find() ? Double.parseDouble(m.group(1)) * 1000 : Double.NaN;
  }

  private String get(String url) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString()).body();
  }
}
