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

    long slowest = 0;
    for (int i = 0; i < 30; i++) {
      String path = i % 2 == 0 ? "/health/live" : "/health/ready";
      long start = System.nanoTime();
      String answer = probe(port, path);
      slowest = Math.max(slowest, System.nanoTime() - start);
      assertThat(answer).as(path).startsWith(path.endsWith("live") ? "HTTP/1.1 200" : "HTTP/1.1 ");
      Thread.sleep(50);
    }
    System.out.printf("slowest of 30 probes among 404 hostile sockets: %.1f ms%n", slowest / 1e6);
    assertThat(probe(port, "/health/ready")).as("the slow check never held a probe; its verdict shows once done")
        .doesNotContain("Exception");
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
    assertThat(send(port, "POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")).startsWith("HTTP/1.1 411");
    assertThat(send(port, "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")).startsWith("HTTP/1.1 413");
    assertThat(send(port, "DELETE /metrics HTTP/1.1\r\n\r\n")).startsWith("HTTP/1.1 405");
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
  void anAddressThatIsNotThisHostsIsToldAsSuchNotAsAPortInUse() {
    // 192.0.2.1 is TEST-NET-1: documentation only, on no machine's interface
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> OpsEndpoint.start(new InetSocketAddress("192.0.2.1", 0),
            new PrometheusMeterRegistry(io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT),
            () -> OpsEndpoint.Verdict.of(true, "relay", "running"), () -> OpsEndpoint.Verdict.of(true, "relay", "running")))
        .hasMessageStartingWith("invalid --http-address (TXBOX_HTTP_ADDRESS): 192.0.2.1 is no address of this host")
        .hasMessageNotContaining("in use");
  }
}
