package io.txbox.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.txbox.server.http.HttpRequest;
import io.txbox.server.http.HttpResponse;
import io.txbox.server.http.HttpServer;
import io.txbox.spi.support.Secrets;
import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP endpoint of a process txbox runs alone ({@code txbox relay}, {@code txbox console}):
 *
 * <ul>
 *   <li>{@code GET /metrics}: every meter in the Prometheus text format, under the names the
 *       Spring Boot starter exports, built at most every 250 ms however many clients ask;
 *   <li>{@code GET /health/live}: 200 while the process's work loop runs, else 503 (restart it);
 *   <li>{@code GET /health/ready}: 200 when it does its work correctly, else 503 with the reasons
 *       (the verdict of {@code txbox status}).
 * </ul>
 *
 * <p>Health answers are JSON: {@code {"status":"UP", ...details}}, with no database error text,
 * host name or process id: anyone who reaches the port reads them, and the log has the rest.
 * Only {@code GET} and {@code HEAD} are served. Requests are read by {@link
 * HttpServer} (Jetty), so clients that send slowly, stay idle or send too much hold no thread:
 * the probes run on a thread of their own and answer from what is known now, the readiness
 * verdict being refreshed in the background ({@link #refreshed}), so that a kubelet's probe is
 * answered within milliseconds while the database is slow or clients misbehave.
 *
 * <pre>{@code
 * OpsEndpoint endpoint = OpsEndpoint.start(new InetSocketAddress(9464), registry, live, ready);
 * }</pre>
 */
final class OpsEndpoint implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(OpsEndpoint.class);
  /** Seconds a client has to send its request, and to take the answer. */
  static final int READ_TIMEOUT_SECONDS = 10;
  /** Scrapes served at once; more wait, up to {@link #QUEUED_SCRAPES}, then get 503. */
  private static final int SCRAPE_THREADS = 2;
  /** Ample: a queued scrape costs a few bytes, and answers from the text {@link Scrapes} keeps. */
  private static final int QUEUED_SCRAPES = 256;
  /** How long the metrics' text is answered again before the registry is asked anew. */
  private static final long SCRAPE_REUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
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
  private final ExecutorService probes;
  private final ExecutorService scrapes;

  private OpsEndpoint(HttpServer server, ExecutorService probes, ExecutorService scrapes) {
    this.server = server;
    this.probes = probes;
    this.scrapes = scrapes;
  }

  /**
   * Serves the endpoint on {@code address}.
   *
   * @param ready asked on the probe thread: it must answer at once, as {@link #refreshed} does
   * @throws IllegalArgumentException naming {@code --http-port} when the port is taken
   */
  static OpsEndpoint start(InetSocketAddress address, PrometheusMeterRegistry registry, Supplier<Verdict> live,
      Supplier<Verdict> ready) {
    ExecutorService probes = Executors.newSingleThreadExecutor(r -> daemon(r, "txbox-http-probes"));
    ExecutorService scrapes = new ThreadPoolExecutor(SCRAPE_THREADS, SCRAPE_THREADS, 0, TimeUnit.MILLISECONDS,
        new ArrayBlockingQueue<>(QUEUED_SCRAPES), r -> daemon(r, "txbox-http"));
    Scrapes scrapeText = new Scrapes(registry);
    HttpServer server;
    try {
      server = HttpServer.start(address,
          HttpServer.Limits.DEFAULTS.withRequestTimeout(Duration.ofSeconds(READ_TIMEOUT_SECONDS)),
          request -> request.path().startsWith("/health/") ? probes : scrapes,
          request -> answer(request, scrapeText, live, ready));
    } catch (BindException e) {
      probes.shutdownNow();
      scrapes.shutdownNow();
      if (!String.valueOf(e.getMessage()).contains("in use")) { // "Cannot assign requested address"
        throw new IllegalArgumentException("invalid --http-address (TXBOX_HTTP_ADDRESS): "
            + address.getAddress().getHostAddress() + " is no address of this host (" + e.getMessage()
            + "): give one of its addresses, 0.0.0.0 for all of them", e);
      }
      throw new IllegalArgumentException("invalid --http-port (TXBOX_HTTP_PORT): " + address.getHostString() + ":"
          + address.getPort() + " is in use (another relay on this host?): give each process its own port, 0 for any free"
          + " one, or turn the endpoint off with --no-http", e);
    } catch (IOException e) {
      probes.shutdownNow();
      scrapes.shutdownNow();
      throw new IllegalArgumentException("invalid --http-address (TXBOX_HTTP_ADDRESS): cannot listen on "
          + address + ": " + e.getMessage(), e);
    }
    log.info("metrics and health at http://{}:{}/metrics, /health/live, /health/ready",
        address.getHostString(), server.address().getPort());
    return new OpsEndpoint(server, probes, scrapes);
  }

  /** The port it listens on: the one given, or the one chosen for port 0. */
  int port() {
    return server.address().getPort();
  }

  /**
   * The registry's text, built at most once per {@link #SCRAPE_REUSE_NANOS} however many ask, and
   * once for all who ask while it is being built: fifty clients asking in a loop cost a few scrapes
   * a second, and Prometheus's own is answered among them.
   */
  private static final class Scrapes {
    private final PrometheusMeterRegistry registry;
    private String text;
    private long builtAt;

    Scrapes(PrometheusMeterRegistry registry) {
      this.registry = registry;
    }

    synchronized String text() {
      long now = System.nanoTime();
      if (text == null || now - builtAt >= SCRAPE_REUSE_NANOS) {
        text = registry.scrape();
        builtAt = now;
      }
      return text;
    }
  }

  private static HttpResponse answer(HttpRequest request, Scrapes metrics, Supplier<Verdict> live,
      Supplier<Verdict> ready) {
    if (!request.method().equals("GET") && !request.method().equals("HEAD")) {
      return plain(405, "text/plain", "only GET and HEAD\n");
    }
    return switch (request.path()) {
      case "/metrics" -> plain(200, "text/plain; version=0.0.4; charset=utf-8", metrics.text());
      case "/health/live" -> health(live);
      case "/health/ready" -> health(ready);
      default -> plain(404, "text/plain", "not found: /metrics, /health/live, /health/ready\n");
    };
  }

  /**
   * {@code check} run in the background at most once per {@code refresh}, its last verdict
   * answered at once: a probe never waits for the database. Before the first verdict, and when a
   * check has not finished for {@code refresh} plus {@link #CHECK_TIMEOUT}, the answer is DOWN,
   * saying so; a check that fails counts as DOWN, its error logged, not shown.
   */
  static Supplier<Verdict> refreshed(Duration refresh, Supplier<Verdict> check) {
    return new RefreshedVerdict(refresh, check);
  }

  /** How long a readiness check may run before the probe reports it as stuck. */
  static final Duration CHECK_TIMEOUT = Duration.ofSeconds(15);
  /** How soon a verdict that says not ready is looked at again. */
  private static final Duration DOWN_REFRESH = Duration.ofSeconds(1);
  /** How long a probe waits for the very first verdict. */
  private static final Duration FIRST_WAIT = Duration.ofMillis(80);

  private static final class RefreshedVerdict implements Supplier<Verdict> {
    private final Duration refresh;
    private final Supplier<Verdict> check;
    private final ExecutorService checking = Executors.newSingleThreadExecutor(r -> daemon(r, "txbox-ready-check"));
    private Verdict last;
    private long startedAt;
    private boolean inFlight;

    RefreshedVerdict(Duration refresh, Supplier<Verdict> check) {
      this.refresh = refresh;
      this.check = check;
      synchronized (this) {
        begin(System.nanoTime()); // the first verdict is under way before the first probe
      }
    }

    @Override
    public synchronized Verdict get() {
      long now = System.nanoTime();
      // Not ready is looked at again sooner: a relay that just started, or just recovered, says
      // so within a second, not after the whole refresh.
      Duration due = last != null && !last.ok() && refresh.compareTo(DOWN_REFRESH) > 0 ? DOWN_REFRESH : refresh;
      if (!inFlight && now - startedAt >= due.toNanos()) {
        begin(now);
      }
      if (last == null) {
        awaitFirst(now);
      }
      if (inFlight && now - startedAt > refresh.plus(CHECK_TIMEOUT).toNanos()) {
        return Verdict.of(false, "problems", List.of("the readiness check has not finished for "
            + Duration.ofNanos(now - startedAt).toSeconds() + " s: the database does not answer"));
      }
      return last != null ? last : Verdict.of(false, "problems", List.of("not checked yet"));
    }

    private void begin(long now) {
      inFlight = true;
      startedAt = now;
      checking.execute(this::run);
    }

    /** Before the first verdict, waits for it a little: well within a probe's time, enough for a quick database. */
    private void awaitFirst(long now) {
      long until = now + FIRST_WAIT.toNanos();
      for (long left = FIRST_WAIT.toNanos(); last == null && left > 0; left = until - System.nanoTime()) {
        try {
          TimeUnit.NANOSECONDS.timedWait(this, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }

    private void run() {
      Verdict verdict;
      try {
        verdict = check.get();
      } catch (RuntimeException e) {
        log.warn("readiness check failed: {}", Secrets.mask(String.valueOf(e.getMessage())));
        verdict = Verdict.of(false, "problems", List.of("the status cannot be read from the database (see the log)"));
      }
      synchronized (this) {
        last = verdict;
        inFlight = false;
        notifyAll();
      }
    }
  }

  private static HttpResponse health(Supplier<Verdict> check) {
    Verdict verdict;
    try {
      verdict = check.get();
    } catch (RuntimeException e) {
      log.warn("health check failed: {}", Secrets.mask(String.valueOf(e.getMessage())));
      verdict = Verdict.of(false, "problems", List.of("cannot check (see the log)"));
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", verdict.ok() ? "UP" : "DOWN");
    body.putAll(verdict.details());
    try {
      return plain(verdict.ok() ? 200 : 503, "application/json", JSON.writeValueAsString(body) + "\n");
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a health verdict cannot be written as JSON", e);
    }
  }

  private static HttpResponse plain(int status, String contentType, String body) {
    return HttpResponse.of(status, contentType, body).with("Cache-Control", "no-store");
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  @Override
  public void close() {
    server.close();
    probes.shutdownNow();
    scrapes.shutdownNow();
  }
}
