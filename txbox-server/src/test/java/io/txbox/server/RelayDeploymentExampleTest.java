package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Kubernetes example ({@code ops/kubernetes/txbox-relay.yaml}) against the real relay: no
 * Docker engine exists here, so the relay runs as a process with the very variables the example
 * sets, plus those Kubernetes adds for the Service named {@code txbox} beside it, and its probes
 * are called at the example's paths and port.
 */
class RelayDeploymentExampleTest {
  private static final Path EXAMPLE = Path.of("..", "ops", "kubernetes", "txbox-relay.yaml");
  private static final Path IMAGE = Path.of("..", "ops", "docker", "Dockerfile");
  private static final Pattern VARIABLE = Pattern.compile(
      "- name: (TXBOX_[A-Z0-9_]+)\\s*\\n\\s*(value: \"?([^\"\\n]*)\"?|valueFrom:)");
  private static final Pattern PROBE = Pattern.compile("path: (/\\S+)\\s*\\n\\s*port: (\\d+)");

  @Test
  void theExampleMeetsPodSecurityRestrictedAndKeepsNoSecretAndNoFloatingTag() throws Exception {
    String yaml = Files.readString(EXAMPLE);
    assertThat(yaml).contains("runAsNonRoot: true", "allowPrivilegeEscalation: false", "drop: [\"ALL\"]",
            "type: RuntimeDefault", "automountServiceAccountToken: false", "enableServiceLinks: false",
            "readOnlyRootFilesystem: true", "timeoutSeconds: 1")
        .as("no password in the manifest: the Secret is created apart").doesNotContain("change-me", "stringData")
        .as("a version or a digest, never a floating tag").doesNotContain(":latest");
    assertThat(yaml).as("the metrics port is open to Prometheus only")
        .containsPattern("kind: NetworkPolicy[\\s\\S]*port: 9464");
    String image = Files.readString(IMAGE);
    assertThat(image).as("the jar stays root's, so the user that runs it cannot change it")
        .contains("COPY txbox.jar /opt/txbox/txbox.jar").doesNotContain("--chown").containsPattern("USER 10001");
  }

  @Test
  void theExampleDeploymentStartsBesideServicesNamedTxboxSomethingAndItsProbesAnswer(@TempDir Path dir) throws Exception {
    String yaml = Files.readString(EXAMPLE);
    Map<String, String> environment = variables(yaml);
    assertThat(environment).containsKeys("TXBOX_JDBC_URL", "TXBOX_DB_PASSWORD", "TXBOX_HTTP_PORT");
    assertThat(new UnknownSettings(TxboxCommand.commandLine(new String[] {"relay"}, Map.of()))
        .find(new Properties(), null, environment)).as("every TXBOX_* variable of the example is an option").isEmpty();

    KafkaBroker kafka = KafkaBroker.shared();
    try (TestDatabase db = TestDatabase.create()) {
      PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build().migrate();
      Map<String, String> env = new LinkedHashMap<>(environment); // where this test's servers are
      env.put("TXBOX_JDBC_URL", TestDatabase.jdbcUrl());
      env.put("TXBOX_DB_USER", "postgres");
      env.put("TXBOX_SCHEMA", db.schema());
      env.put("TXBOX_KAFKA_BOOTSTRAP_SERVERS", kafka.bootstrapServers());
      // What Kubernetes adds to every pod for Services of these names, were service links left on:
      // TXBOX_RELAY_PORT, TXBOX_DB_SERVICE_HOST, even TXBOX_HTTP_PORT=tcp://... are not settings.
      env.putAll(serviceLinks("txbox", "10.96.0.17", 9464));
      env.putAll(serviceLinks("txbox-relay", "10.96.0.18", 9464));
      env.putAll(serviceLinks("txbox-db", "10.96.0.19", 5432));
      Map<String, String> http = new LinkedHashMap<>(serviceLinks("txbox-http", "10.96.0.20", 9464));
      http.remove("TXBOX_HTTP_PORT"); // the pod's own TXBOX_HTTP_PORT wins over the link, as in Kubernetes
      env.putAll(http);
      try (RelayProcesses relays = new RelayProcesses()) {
        Process relay = relays.start(dir, List.of(), env, List.of());
        OpsClient ops = OpsClient.of(relays, 0);
        Matcher probe = PROBE.matcher(yaml);
        int probes = 0;
        while (probe.find()) {
          String path = probe.group(1);
          assertThat(Integer.parseInt(probe.group(2))).as("probe port of " + path).isEqualTo(ops.port());
          await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
              assertThat(ops.get(path).status()).as(path + ": " + ops.get(path).body()).isEqualTo(200));
          probes++;
        }
        assertThat(probes).as("liveness and readiness probes").isEqualTo(2);
        assertThat(yaml).contains("prometheus.io/port: \"" + ops.port() + "\"").contains("prometheus.io/path: /metrics");
        assertThat(ops.get("/metrics").body()).contains("txbox_relay_buckets_owned");
        assertThat(relay.isAlive()).as(relays.log(0)).isTrue();
      }
    }
  }

  /** The example's TXBOX_* variables; one set from a Secret gets the example Secret's value. */
  private static Map<String, String> variables(String yaml) {
    Map<String, String> found = new LinkedHashMap<>();
    Matcher m = VARIABLE.matcher(yaml);
    while (m.find()) {
      found.put(m.group(1), m.group(3) != null ? m.group(3) : secretValue(yaml));
    }
    return found;
  }

  private static String secretValue(String yaml) {
    Matcher m = Pattern.compile("stringData:\\s*\\n\\s*password: (\\S+)").matcher(yaml);
    return m.find() ? m.group(1) : "";
  }

  /** The variables Kubernetes puts in every pod of a namespace for a Service with one TCP port. */
  static Map<String, String> serviceLinks(String service, String ip, int port) {
    String prefix = service.toUpperCase(java.util.Locale.ROOT).replace('-', '_');
    String tcp = prefix + "_PORT_" + port + "_TCP";
    return Map.of(prefix + "_SERVICE_HOST", ip, prefix + "_SERVICE_PORT", Integer.toString(port),
        prefix + "_SERVICE_PORT_HTTP", Integer.toString(port), prefix + "_PORT", "tcp://" + ip + ":" + port,
        tcp, "tcp://" + ip + ":" + port, tcp + "_PROTO", "tcp", tcp + "_PORT", Integer.toString(port),
        tcp + "_ADDR", ip);
  }
}
