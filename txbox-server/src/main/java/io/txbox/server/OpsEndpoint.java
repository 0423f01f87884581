package io.txbox.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.txbox.spi.support.Secrets;
import java.io.IOException;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP endpoint of a process txbox runs alone ({@code txbox relay}, {@code txbox console}):
 *
 * <ul>
 *   <li>{@code GET /metrics}: every meter in the Prometheus text format, under the names the
 *       Spring Boot starter exports;
 *   <li>{@code GET /health/live}: 200 while the process's work loop runs, else 503 (restart it);
 *   <li>{@code GET /health/ready}: 200 when it does its work correctly, else 503 with the reasons
 *       (the verdict of {@code txbox status}).
 * </ul>
 *
 * <p>Health answers are JSON: {@code {"status":"UP", ...details}}. Only {@code GET} and {@code
 * HEAD} are served, nothing is read from a request but its line and headers, and a client gets
 * {@link #READ_TIMEOUT_SECONDS} s to send them, so slow clients cannot hold the endpoint.
 *
 * <pre>{@code
 * OpsEndpoint endpoint = OpsEndpoint.start(new InetSocketAddress(9464), registry, live, ready);
 * }</pre>
 */
final class OpsEndpoint implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(OpsEndpoint.class);
  /** Seconds a client has to send its request, and to take the answer. */
  static final int READ_TIMEOUT_SECONDS = 10;
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A health verdict and what it rests on, shown in the answer. */
  record Verdict(boolean ok, Map<String, Object> details) {
    static Verdict of(boolean ok, String key, Object value) {
      Map<String, Object> details = new LinkedHashMap<>();
      details.put(key, value);
      return new Verdict(ok, details);
    }
  }

  private final HttpServer server;
  private final ExecutorService threads;

  private OpsEndpoint(HttpServer server, ExecutorService threads) {
    this.server = server;
    this.threads = threads;
  }

  /**
   * Serves the endpoint on {@code address}.
   *
   * @throws IllegalArgumentException naming {@code --http-port} when the port is taken
   */
  static OpsEndpoint start(InetSocketAddress address, PrometheusMeterRegistry registry, Supplier<Verdict> live,
      Supplier<Verdict> ready) {
    limitSlowClients(Duration.ofSeconds(READ_TIMEOUT_SECONDS), "read timeout");
    HttpServer server;
    try {
      server = HttpServer.create(address, 16);
    } catch (BindException e) {
      throw new IllegalArgumentException("invalid --http-port (TXBOX_HTTP_PORT): " + address
          + " is in use (another relay on this host?): give each process its own port, 0 for any free"
          + " one, or turn the endpoint off with --no-http", e);
    } catch (IOException e) {
      throw new IllegalArgumentException("invalid --http-address (TXBOX_HTTP_ADDRESS): cannot listen on "
          + address + ": " + e.getMessage(), e);
    }
    ExecutorService threads = Executors.newFixedThreadPool(2, r -> {
      Thread t = new Thread(r, "txbox-http");
      t.setDaemon(true);
      return t;
    });
    server.setExecutor(threads);
    server.createContext("/", exchange -> answer(exchange, registry, live, ready));
    server.start();
    log.info("metrics and health at http://{}:{}/metrics, /health/live, /health/ready",
        address.getHostString(), server.getAddress().getPort());
    return new OpsEndpoint(server, threads);
  }

  /**
   * Gives every client of the JDK's HTTP server in this process {@code timeout} to send its request
   * and to take the answer (the JDK reads these limits once, when the first server of the process
   * starts: a command that runs another server too, the console, calls this before starting it).
   *
   * @param setting the option that gave {@code timeout}, named when it is out of range
   */
  static void limitSlowClients(Duration timeout, String setting) {
    if (timeout.compareTo(Duration.ofSeconds(1)) < 0 || timeout.compareTo(Duration.ofSeconds(60)) > 0) {
      throw new IllegalArgumentException("invalid " + setting + ": must be between 1s and 60s, was "
          + DurationConverter.format(timeout));
    }
    String seconds = Long.toString(timeout.toSeconds());
    System.setProperty("sun.net.httpserver.maxReqTime", System.getProperty("sun.net.httpserver.maxReqTime", seconds));
    System.setProperty("sun.net.httpserver.maxRspTime", System.getProperty("sun.net.httpserver.maxRspTime", seconds));
  }

  /** The port it listens on: the one given, or the one chosen for port 0. */
  int port() {
    return server.getAddress().getPort();
  }

  private static void answer(HttpExchange exchange, PrometheusMeterRegistry registry, Supplier<Verdict> live,
      Supplier<Verdict> ready) throws IOException {
    try {
      String method = exchange.getRequestMethod();
      if (!method.equals("GET") && !method.equals("HEAD")) {
        send(exchange, 405, "text/plain", "only GET and HEAD\n");
        return;
      }
      switch (exchange.getRequestURI().getPath()) {
        case "/metrics" -> send(exchange, 200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape());
        case "/health/live" -> health(exchange, live);
        case "/health/ready" -> health(exchange, ready);
        default -> send(exchange, 404, "text/plain", "not found: /metrics, /health/live, /health/ready\n");
      }
    } catch (RuntimeException | Error e) {
      // A failing probe is an answer too: never a connection left hanging.
      log.warn("http endpoint: {} failed: {}", exchange.getRequestURI().getPath(), e.toString());
      send(exchange, 500, "text/plain", "internal error\n");
    } finally {
      exchange.close();
    }
  }

  /** {@code check}, asked at most once per {@code refresh}: probes may come often, a status costs queries. */
  static Supplier<Verdict> cached(java.time.Duration refresh, Supplier<Verdict> check) {
    return new Supplier<>() {
      private Verdict last;
      private long readAt;

      @Override
      public synchronized Verdict get() {
        long now = System.nanoTime();
        if (last == null || now - readAt >= refresh.toNanos()) {
          last = check.get();
          readAt = now;
        }
        return last;
      }
    };
  }

  private static void health(HttpExchange exchange, Supplier<Verdict> check) throws IOException {
    Verdict verdict;
    try {
      verdict = check.get();
    } catch (RuntimeException e) {
      verdict = Verdict.of(false, "problems", List.of("cannot check: " + Secrets.mask(String.valueOf(e.getMessage()))));
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", verdict.ok() ? "UP" : "DOWN");
    body.putAll(verdict.details());
    send(exchange, verdict.ok() ? 200 : 503, "application/json", JSON.writeValueAsString(body) + "\n");
  }

  private static void send(HttpExchange exchange, int status, String contentType, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", contentType);
    exchange.getResponseHeaders().set("Cache-Control", "no-store");
    boolean head = exchange.getRequestMethod().equals("HEAD");
    exchange.sendResponseHeaders(status, head ? -1 : bytes.length);
    if (!head) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    }
  }

  @Override
  public void close() {
    server.stop(0);
    threads.shutdownNow();
  }
}
