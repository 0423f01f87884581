package io.txbox.server.console;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.txbox.Inbox;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.server.console.ConsoleUsers.Role;
import io.txbox.server.console.Sessions.Session;
import io.txbox.spi.Publisher;
import io.txbox.spi.Secrets;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The web console ({@code txbox console}): overview, dead letters, replay and the audit log, on
 * the JDK's HTTP server. It listens on 127.0.0.1 unless told otherwise, and refuses any other
 * address without a users file. Signed-in users are viewers or operators; only an operator's
 * form, carrying the session's CSRF token, changes anything. Without a users file everyone on the
 * machine is an anonymous viewer.
 *
 * <pre>{@code
 * Console console = Console.start(new Console.Settings(new InetSocketAddress("127.0.0.1", 8090),
 *     ConsoleUsers.load(Path.of("users.properties")), Duration.ofHours(8)), store, inbox, publisher);
 * }</pre>
 */
public final class Console implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Console.class);
  /** Requests served at once. */
  static final int THREADS = 4;

  /**
   * How the console listens and who may sign in.
   *
   * @param listen the address; anything but loopback needs {@code users}
   * @param users who may sign in, or null for anonymous viewers only
   * @param sessionTimeout how long a sign-in lasts, 1 minute to 7 days
   */
  public record Settings(InetSocketAddress listen, ConsoleUsers users, Duration sessionTimeout) {
    /** Checks the settings, naming the option at fault. */
    public Settings {
      if (listen.isUnresolved()) {
        throw new IllegalArgumentException("invalid --listen: cannot resolve " + listen.getHostString());
      }
      if (users == null && !listen.getAddress().isLoopbackAddress()) {
        throw new IllegalArgumentException("invalid --listen: refusing to listen on " + listen.getHostString()
            + " without authentication; give --users FILE (hashes from txbox console hash-password) or listen"
            + " on 127.0.0.1");
      }
      if (sessionTimeout.compareTo(Duration.ofMinutes(1)) < 0 || sessionTimeout.compareTo(Duration.ofDays(7)) > 0) {
        throw new IllegalArgumentException("invalid --session-timeout: must be between 1m and 7d, was "
            + sessionTimeout);
      }
    }
  }

  private final HttpServer server;
  private final ExecutorService threads;
  private final Sessions sessions;
  private final ConsoleUsers users;
  private final Pages pages;

  private Console(Settings settings, Pages pages) throws IOException {
    this.sessions = new Sessions(settings.sessionTimeout());
    this.users = settings.users();
    this.pages = pages;
    this.threads = Executors.newFixedThreadPool(THREADS, r -> {
      Thread t = new Thread(r, "txbox-console");
      t.setDaemon(true);
      return t;
    });
    this.server = HttpServer.create(settings.listen(), 50);
    server.setExecutor(threads);
    server.createContext("/", this::handle);
    server.start();
  }

  /**
   * Starts listening.
   *
   * @param publisher where replays go, or null when no broker was given (replays can then only be previewed)
   */
  public static Console start(Settings settings, PostgresOutboxStore store, Inbox inbox, Supplier<Publisher> publisher)
      throws IOException {
    return new Console(settings, new Pages(store, inbox, publisher));
  }

  /** Where it listens (the port chosen when 0 was asked for). */
  public InetSocketAddress address() {
    return server.getAddress();
  }

  @Override
  public void close() {
    server.stop(1);
    threads.shutdownNow();
    pages.close();
  }

  private void handle(HttpExchange exchange) throws IOException {
    Response response;
    try {
      response = route(Request.read(exchange, sessions));
    } catch (IllegalArgumentException e) {
      response = Response.error(400, e.getMessage());
    } catch (RuntimeException e) {
      log.warn("console: {} {} failed", exchange.getRequestMethod(), exchange.getRequestURI().getPath(), e);
      response = Response.error(500, Secrets.mask(e.getMessage()));
    }
    send(exchange, response);
  }

  private Response route(Request r) {
    switch (r.path()) {
      case "/console.css":
        return Response.css(Html.CSS);
      case "/login":
        return r.isPost() ? signIn(r) : Response.page(200, pages.login(r, null));
      default:
        break;
    }
    if (users != null && r.session().isEmpty()) {
      return r.isPost() ? Response.error(401, "sign in first") : Response.redirect("/login");
    }
    if (r.isPost()) {
      Optional<String> refused = refuse(r);
      if (refused.isPresent()) {
        return Response.error(403, refused.get());
      }
      if (r.path().equals("/logout")) {
        sessions.close(r.session().orElseThrow().id());
        return Response.redirect("/login").withCookie(Request.SESSION_COOKIE + "=; Max-Age=0; Path=/");
      }
    }
    return pages.serve(r);
  }

  /** Why an action is refused: no operator signed in, or no valid CSRF token. */
  private static Optional<String> refuse(Request r) {
    if (r.session().isEmpty()) {
      return Optional.of("changes need a signed-in operator: start the console with --users");
    }
    Session session = r.session().get();
    String csrf = r.param("csrf");
    if (csrf == null || !MessageDigest.isEqual(session.csrfToken().getBytes(StandardCharsets.UTF_8),
        csrf.getBytes(StandardCharsets.UTF_8))) { // in constant time: the comparison tells nothing about the token
      return Optional.of("missing or wrong CSRF token: reload the page and try again");
    }
    if (session.role() != Role.OPERATOR && !r.path().equals("/logout")) {
      return Optional.of(session.user() + " is a viewer: only an operator may change anything");
    }
    return Optional.empty();
  }

  private Response signIn(Request r) {
    String user = r.param("username");
    String password = r.param("password");
    Optional<Role> role = users == null || user == null || password == null ? Optional.empty()
        : users.authenticate(user, password.toCharArray());
    if (role.isEmpty()) {
      log.warn("console: failed sign-in for user '{}'", user);
      return Response.page(401, pages.login(r, users == null ? "no users file: everyone is a viewer" : "wrong user or password"));
    }
    Session session = sessions.open(user, role.get());
    log.info("console: {} signed in as {}", user, role.get());
    return Response.redirect("/").withCookie(Request.SESSION_COOKIE + "=" + session.id()
        + "; Path=/; HttpOnly; SameSite=Strict");
  }

  private static void send(HttpExchange exchange, Response response) throws IOException {
    byte[] body = response.body().getBytes(StandardCharsets.UTF_8);
    var headers = exchange.getResponseHeaders();
    headers.set("Content-Type", response.contentType());
    headers.set("Cache-Control", "no-store");
    headers.set("X-Content-Type-Options", "nosniff");
    headers.set("Referrer-Policy", "no-referrer");
    headers.set("Content-Security-Policy", "default-src 'self'; form-action 'self'; frame-ancestors 'none'");
    if (response.location() != null) {
      headers.set("Location", response.location());
    }
    if (response.cookie() != null) {
      headers.set("Set-Cookie", response.cookie());
    }
    exchange.sendResponseHeaders(response.status(), body.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(body);
    }
  }
}
