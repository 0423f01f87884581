package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The relay's metrics and health endpoint, probed the way a kubelet probes it (a fresh connection,
 * a 1 s timeout) while other clients misbehave: sockets that trickle their headers, idle sockets,
 * requests far over the size limit, and a readiness check whose database answers slowly. Before,
 * four trickling sockets took the endpoint's two threads and 26 of 28 probes missed their second.
 */
class OpsEndpointHostileClientsTest {
  /** The kubelet's default probe timeout, which the example deployment keeps. */
  private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(1);
  private final List<Socket> sockets = new ArrayList<>();
  private final ExecutorService attackers = Executors.newCachedThreadPool();
  private final AtomicBoolean attacking = new AtomicBoolean(true);
  private OpsEndpoint endpoint;

  @AfterEach
  void stop() throws IOException {
    attacking.set(false);
    attackers.shutdownNow();
    for (Socket s : sockets) {
      s.close();
    }
    if (endpoint != null) {
      endpoint.close();
    }
  }

  @Test
  void probesAreAnsweredWithinTheirTimeoutWhileHundredsOfClientsTrickleIdleOrFlood() throws Exception {
    endpoint = OpsEndpoint.start(new InetSocketAddress("127.0.0.1", 0), new PrometheusMeterRegistry(
            io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT),
        () -> OpsEndpoint.Verdict.of(true, "relay", "running"),
        OpsEndpoint.refreshed(Duration.ofMillis(200), () -> {
          sleep(3_000); // a database that takes seconds to answer the status queries
          return OpsEndpoint.Verdict.of(true, "relay", "running");
        }));
    int port = endpoint.port();
    for (int i = 0; i < 200; i++) {
      Socket trickling = connect(port);
      trickling.getOutputStream().write("GET /health/live HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
      attackers.execute(() -> trickle(trickling));
      connect(port); // and one that sends nothing at all
    }
    for (int i = 0; i < 4; i++) {
      Socket flooding = connect(port);
      attackers.execute(() -> flood(flooding));
    }

    long first = 0;
    long slowest = 0;
    for (int i = 0; i < 30; i++) {
      String path = i % 2 == 0 ? "/health/live" : "/health/ready";
      long start = System.nanoTime();
      String answer = probe(port, path);
      if (i == 0) {
        first = System.nanoTime() - start; // a cold JVM's
      } else {
        slowest = Math.max(slowest, System.nanoTime() - start);
      }
      assertThat(answer).as(path).startsWith(path.endsWith("live") ? "HTTP/1.1 200" : "HTTP/1.1 ");
      Thread.sleep(50);
    }
    System.out.printf("probes among 404 hostile sockets: the first %.1f ms, the slowest of the 29 others %.1f ms%n",
        first / 1e6, slowest / 1e6);
    assertThat(probe(port, "/health/ready")).as("the slow check never held a probe; its verdict shows once done")
        .doesNotContain("Exception");
  }

  @Test
  void prometheusGetsItsScrapeWhileFiftyClientsAskForMetricsInALoop() throws Exception {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);
    new io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics().bindTo(registry);
    new io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics().bindTo(registry);
    endpoint = OpsEndpoint.start(new InetSocketAddress("127.0.0.1", 0), registry,
        () -> OpsEndpoint.Verdict.of(true, "relay", "running"), () -> OpsEndpoint.Verdict.of(true, "relay", "running"));
    int port = endpoint.port();
    java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
    for (int i = 0; i < 50; i++) {
      attackers.execute(() -> {
        while (attacking.get()) {
          try {
            asked.incrementAndGet();
            send(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
          } catch (IOException | AssertionError e) {
            // a looping client that misses an answer asks again
          }
        }
      });
    }
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> asked.get() >= 200); // loops under way
    List<String> statuses = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      String answer = scrape(port);
      statuses.add(answer.substring(0, Math.min(12, answer.length())));
      Thread.sleep(100);
    }
    assertThat(statuses).as("Prometheus's scrapes among 50 looping clients").allMatch(s -> s.equals("HTTP/1.1 200"));
  }

  /** A scrape as Prometheus makes it: its own connection, up to its 10 s scrape timeout. */
  private static String scrape(int port) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
      s.setSoTimeout(10_000);
      s.getOutputStream().write(("GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Agent: Prometheus/2.45\r\n\r\n")
          .getBytes(StandardCharsets.ISO_8859_1));
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
    }
  }

  @Test
  void aRequestOverTheSizeLimitIsRefusedAndMalformedOnesGetABadRequest() throws Exception {
    endpoint = OpsEndpoint.start(new InetSocketAddress("127.0.0.1", 0), new PrometheusMeterRegistry(
            io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT),
        () -> OpsEndpoint.Verdict.of(true, "relay", "running"), () -> OpsEndpoint.Verdict.of(true, "relay", "running"));
    int port = endpoint.port();
    assertThat(send(port, "GET /health/live HTTP/1.1\r\nX-Junk: " + "a".repeat(40_000) + "\r\n\r\n"))
        .startsWith("HTTP/1.1 431");
    assertThat(send(port, "GARBAGE\r\n\r\n")).startsWith("HTTP/1.1 400");
    assertThat(send(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"))
        .startsWith("HTTP/1.1 411");
    assertThat(send(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"))
        .startsWith("HTTP/1.1 413");
    assertThat(send(port, "DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n")).startsWith("HTTP/1.1 405");
    assertThat(send(port, "GET /health/live HTTP/1.1\r\n\r\n")).as("HTTP/1.1 without Host").startsWith("HTTP/1.1 400");
    assertThat(send(port, "GET /health/live HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n")).as("a NUL in a header")
        .startsWith("HTTP/1.1 400").doesNotContain("a\0b");
    assertThat(send(port, "GET /health/live HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n")).as("a bare CR in a header")
        .startsWith("HTTP/1.1 400");
    assertThat(send(port, "GET //evil.example/metrics HTTP/1.1\r\nHost: x\r\n\r\n")).as("an empty path segment")
        .startsWith("HTTP/1.1 400");
    assertThat(send(port, "GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")).startsWith("HTTP/1.1 200")
        .contains("Connection: close", "\"status\":\"UP\"");
  }

  /** Opens a connection as a kubelet does for each probe and reads the whole answer, within the probe's timeout. */
  private static String probe(int port, String path) throws IOException {
    return send(port, "GET " + path + " HTTP/1.1\r\nHost: 10.0.0.1:" + port + "\r\nUser-Agent: kube-probe/1.30\r\n\r\n");
  }

  private static String send(int port, String request) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), (int) PROBE_TIMEOUT.toMillis());
      s.setSoTimeout((int) PROBE_TIMEOUT.toMillis());
      long deadline = System.nanoTime() + PROBE_TIMEOUT.toNanos();
      try {
        s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
      } catch (IOException e) {
        // refused before it was all sent: the answer was written already
      }
      InputStream in = s.getInputStream();
      StringBuilder answer = new StringBuilder();
      byte[] buffer = new byte[8192];
      int n;
      try {
        while ((n = in.read(buffer)) >= 0) {
          answer.append(new String(buffer, 0, n, StandardCharsets.ISO_8859_1));
          if (System.nanoTime() > deadline) {
            throw new SocketTimeoutException("answer not complete within " + PROBE_TIMEOUT);
          }
        }
      } catch (SocketTimeoutException e) {
        throw new AssertionError("no whole answer within the probe's " + PROBE_TIMEOUT + ": '" + answer + "'", e);
      }
      return answer.toString();
    }
  }

  private Socket connect(int port) throws IOException {
    Socket s = new Socket("127.0.0.1", port);
    sockets.add(s);
    return s;
  }

  /** One header byte every 200 ms, as a slow-loris client sends. */
  private void trickle(Socket s) {
    try {
      OutputStream out = s.getOutputStream();
      while (attacking.get()) {
        out.write('X');
        out.flush();
        Thread.sleep(200);
      }
    } catch (IOException | InterruptedException e) {
      // cut off by the server, or the test is over
    }
  }

  /** Header bytes as fast as the server takes them, far past any limit. */
  private void flood(Socket s) {
    byte[] junk = "X-Flood: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(100)
        .getBytes(StandardCharsets.US_ASCII);
    try {
      OutputStream out = s.getOutputStream();
      out.write("GET /metrics HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
      while (attacking.get()) {
        out.write(junk);
      }
    } catch (IOException e) {
      // refused and closed by the server, as it should be
    }
  }

  private static void sleep(long millis) {
    try {
      TimeUnit.MILLISECONDS.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void aPortInUseIsToldByItsAddressAndPortAndTheOptionThatSetsIt() throws Exception {
    try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("0.0.0.0"))) {
      int port = taken.getLocalPort();
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> OpsEndpoint.start(new InetSocketAddress("0.0.0.0", port),
              new PrometheusMeterRegistry(io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT),
              () -> OpsEndpoint.Verdict.of(true, "relay", "running"), () -> OpsEndpoint.Verdict.of(true, "relay", "running")))
          .hasMessageStartingWith("invalid --http-port (TXBOX_HTTP_PORT): 0.0.0.0:" + port + " is in use");
    }
  }

  @Test
  void anAddressThatIsNotThisHostsIsToldAsSuchNotAsAPortInUse() {
    // 192.0.2.1 is TEST-NET-1: documentation only, on no machine's interface
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> OpsEndpoint.start(new InetSocketAddress("192.0.2.1", 0),
            new PrometheusMeterRegistry(io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT),
            () -> OpsEndpoint.Verdict.of(true, "relay", "running"), () -> OpsEndpoint.Verdict.of(true, "relay", "running")))
        .hasMessageStartingWith("invalid --http-address (TXBOX_HTTP_ADDRESS): 192.0.2.1 is no address of this host")
        .hasMessageNotContaining("in use");
  }
}
