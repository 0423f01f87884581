package io.txbox.server.console;

import io.txbox.Inbox;
import io.txbox.jdbc.OperatorStore;
import io.txbox.server.DurationConverter;
import io.txbox.server.TerminalText;
import io.txbox.server.console.ConsoleUsers.Role;
import io.txbox.server.console.Sessions.Session;
import io.txbox.server.http.HttpRequest;
import io.txbox.server.http.HttpResponse;
import io.txbox.server.http.HttpServer;
import io.txbox.spi.Publisher;
import io.txbox.spi.support.Secrets;
import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The web console ({@code txbox console}): overview, dead letters, replay and the audit log. It
 * runs on {@link HttpServer} (Jetty), as the relay's endpoint does, so a page's thread is taken
 * only once its request has arrived whole: clients that send slowly or stay idle hold no thread
 * and delay nobody; at most {@value #QUEUED_REQUESTS} requests wait for a thread, and one whose
 * client has left is dropped unbuilt. It listens on 127.0.0.1 unless told otherwise, and refuses any other
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
  /** Default of {@link Settings#threads}. */
  public static final int DEFAULT_THREADS = 32;
  /** Requests that wait for one of the {@link Settings#threads}; more are answered 503 (busy). */
  static final int QUEUED_REQUESTS = 64;
  /** Default of {@link Settings#requestTimeout}. */
  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(5);
  /** Host names every console answers to; {@link Settings#allowedHosts} adds to them. */
  static final Set<String> LOOPBACK_HOSTS = Set.of("localhost", "127.0.0.1", "[::1]");
  private static final Pattern HOST_NAME = Pattern.compile("[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?|\\[[0-9a-f:.]{2,45}]");

  /**
   * How the console listens and who may sign in.
   *
   * @param listen the address; anything but loopback needs {@code users}
   * @param users who may sign in, or null for anonymous viewers only
   * @param sessionTimeout how long a sign-in lasts, 1 minute to 7 days
   * @param allowedHosts the names clients reach it by (a proxy's public name), beyond loopback
   *     and the listen address: any other {@code Host} header is refused, so that a web page on
   *     another site cannot reach a console on this machine through DNS rebinding
   * @param threads pages built at once, 4 to 256; a request takes one only once it has arrived whole
   * @param trustedProxies the reverse proxies, by address or range ({@code 10.0.0.0/8}), whose
   *     {@code X-Forwarded-For} names the client for the sign-in throttle and the log; from any
   *     other peer the header is ignored, since a client may write it
   * @param requestTimeout how long a client may take to send its request, and again to take the
   *     answer, 1 s to 60 s; a slower one is cut off
   */
  public record Settings(InetSocketAddress listen, ConsoleUsers users, Duration sessionTimeout,
      Set<String> allowedHosts, int threads, List<String> trustedProxies, Duration requestTimeout) {
    /** Loopback host names only, {@value #DEFAULT_THREADS} threads, no proxy, a 5 s request timeout. */
    public Settings(InetSocketAddress listen, ConsoleUsers users, Duration sessionTimeout) {
      this(listen, users, sessionTimeout, Set.of(), DEFAULT_THREADS, List.of(), DEFAULT_REQUEST_TIMEOUT);
    }

    /** Checks the settings, naming the option at fault. */
    public Settings {
      trustedProxies = List.copyOf(trustedProxies);
      TrustedProxies.parse(trustedProxies); // refuses what is no address or range
      allowedHosts = allowedHosts.stream().map(h -> h.toLowerCase(Locale.ROOT)).collect(Collectors.toUnmodifiableSet());
      allowedHosts.stream().filter(h -> !HOST_NAME.matcher(h).matches()).findFirst().ifPresent(h -> {
        throw new IllegalArgumentException("invalid --allowed-host (TXBOX_ALLOWED_HOST): '" + TerminalText.of(h, 100)
            + "' is no host name: give a name such as console.example.com, an IPv4 address, or [an IPv6 one]");
      });
      if (threads < 4 || threads > 256) {
        throw new IllegalArgumentException("invalid --threads (TXBOX_THREADS): must be between 4 and 256, was "
            + threads);
      }
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
      if (requestTimeout.compareTo(Duration.ofSeconds(1)) < 0 || requestTimeout.compareTo(Duration.ofSeconds(60)) > 0) {
        throw new IllegalArgumentException("invalid --request-timeout (TXBOX_REQUEST_TIMEOUT): must be between 1s"
            + " and 60s, was " + DurationConverter.format(requestTimeout));
      }
    }
  }

  private final HttpServer server;
  private final ExecutorService threads;
  private final Sessions sessions;
  private final ConsoleUsers users;
  private final Pages pages;
  private final Set<String> hosts;
  private final SignInThrottle throttle = new SignInThrottle();
  private final SignInLog signInLog = new SignInLog();
  /** Null without a users file: nobody signs in. */
  private final DeviceCookies devices;
  private final TrustedProxies proxies;
  /** Set once the log said that requests carry X-Forwarded-For from a peer no one said to trust. */
  private final AtomicBoolean untrustedForwardingTold = new AtomicBoolean();

  private Console(Settings settings, Pages pages) throws IOException {
    this.proxies = TrustedProxies.parse(settings.trustedProxies());
    this.sessions = new Sessions(settings.sessionTimeout());
    this.users = settings.users();
    this.devices = users == null ? null : new DeviceCookies(users);
    this.pages = pages;
    this.hosts = new HashSet<>(LOOPBACK_HOSTS);
    hosts.addAll(settings.allowedHosts());
    if (!settings.listen().getAddress().isAnyLocalAddress()) {
      hosts.add(settings.listen().getHostString().toLowerCase(Locale.ROOT));
    }
    // A bounded queue: a burst of requests past it is answered 503 at once, instead of pages being
    // built long after their clients have gone
    this.threads = new ThreadPoolExecutor(settings.threads(), settings.threads(), 0, TimeUnit.MILLISECONDS,
        new ArrayBlockingQueue<>(QUEUED_REQUESTS), r -> {
          Thread t = new Thread(r, "txbox-console");
          t.setDaemon(true);
          return t;
        });
    HttpServer.Limits limits = HttpServer.Limits.DEFAULTS
        .withMaxBodyBytes(Request.MAX_FORM_BYTES).withRequestTimeout(settings.requestTimeout());
    try {
      this.server = HttpServer.start(settings.listen(), limits, request -> threads, this::answer);
    } catch (BindException e) {
      threads.shutdownNow();
      if (!String.valueOf(e.getMessage()).contains("in use")) { // "Cannot assign requested address"
        throw new IllegalArgumentException("invalid --listen: " + settings.listen().getHostString()
            + " is no address of this host (" + e.getMessage() + "): give one of its addresses, 0.0.0.0 for all"
            + " of them", e);
      }
      throw new IllegalArgumentException("invalid --listen: " + settings.listen().getHostString() + ":"
          + settings.listen().getPort() + " is in use (another console?): give a free port", e);
    } catch (IOException | RuntimeException e) {
      threads.shutdownNow();
      throw e;
    }
  }

  /**
   * Starts listening.
   *
   * @param publisher where replays go, or null when no broker was given (replays can then only be previewed)
   */
  public static Console start(Settings settings, OperatorStore store, Inbox inbox, Supplier<Publisher> publisher)
      throws IOException {
    return new Console(settings, new Pages(store, inbox, publisher));
  }

  /** Where it listens (the port chosen when 0 was asked for). */
  public InetSocketAddress address() {
    return server.address();
  }

  @Override
  public void close() {
    server.close();
    threads.shutdownNow();
    pages.close();
  }

  /** Answers every request, whatever goes wrong: an {@link Error} such as running out of memory included. */
  private HttpResponse answer(HttpRequest request) {
    Response response;
    try {
      response = route(Request.read(request, sessions));
    } catch (IllegalArgumentException e) {
      response = Response.error(400, e.getMessage());
    } catch (RuntimeException | Error e) {
      log.warn("console: {} {} failed", request.method(), TerminalText.of(request.path(), 200), e);
      response = Response.error(500, Secrets.mask(String.valueOf(e.getMessage())));
    }
    return encode(response);
  }

  private Response route(Request r) {
    String host = hostName(r.header("Host"));
    if (host != null && !hosts.contains(host)) {
      return Response.error(421, "this console does not answer to host '" + host + "': start it with"
          + " --allowed-host " + host + " if that is the name clients use");
    }
    Optional<String> foreign = foreignOrigin(r);
    if (r.isPost() && foreign.isPresent()) {
      return Response.error(403, "a form from " + foreign.get() + " cannot act on this console");
    }
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

  /** {@code host:port} without the port, lower case; null for null. */
  private static String hostName(String hostHeader) {
    if (hostHeader == null) {
      return null;
    }
    String h = hostHeader.trim().toLowerCase(Locale.ROOT);
    int colon = h.lastIndexOf(':');
    return colon > h.lastIndexOf(']') ? h.substring(0, colon) : h;
  }

  /**
   * The site a browser says a request comes from ({@code Origin}, else {@code Referer}) when it is
   * not this console's: a page elsewhere cannot sign anyone in or act with their session.
   */
  private static Optional<String> foreignOrigin(Request r) {
    String origin = r.header("Origin") != null ? r.header("Origin") : r.header("Referer");
    String host = r.header("Host");
    if (origin == null || host == null) {
      return Optional.empty(); // not a browser, or a browser that sends neither: the CSRF token still guards
    }
    try {
      String authority = URI.create(origin.trim()).getRawAuthority();
      return host.trim().equalsIgnoreCase(authority) ? Optional.empty()
          : Optional.of(TerminalText.of(origin, 200));
    } catch (IllegalArgumentException e) {
      return Optional.of("an unreadable origin");
    }
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
    String address = clientAddress(r);
    String shownUser = user == null ? "" : TerminalText.of(user, 100); // a name cannot forge a log line
    Instant now = Instant.now();
    boolean provenDevice = devices != null && devices.proves(r.cookie(DeviceCookies.NAME), user, now);
    Optional<Duration> wait = throttle.waitFor(address, String.valueOf(user), provenDevice, now);
    if (wait.isPresent()) {
      signInLog.warn(now, "console: sign-in for user '{}' from {} refused: too many wrong passwords", shownUser, address);
      return Response.page(429, pages.login(r, "too many wrong passwords for this user or from this address:"
          + " try again in " + Math.max(1, wait.get().toSeconds()) + " s"));
    }
    Optional<Role> role = users == null || user == null || password == null ? Optional.empty()
        : users.authenticate(user, password.toCharArray());
    if (role.isEmpty()) {
      // The wait counts from now, when the hash check ended, not from the request: the check takes
      // a noticeable part of the first wait (210,000 PBKDF2 rounds) and would otherwise use it up.
      throttle.failed(address, String.valueOf(user), provenDevice, Instant.now());
      signInLog.warn(now, "console: failed sign-in for user '{}' from {}", shownUser, address);
      return Response.page(401, pages.login(r, users == null ? "no users file: everyone is a viewer" : "wrong user or password"));
    }
    throttle.succeeded(address, user);
    Session session = sessions.open(user, role.get());
    log.info("console: {} signed in as {} from {}", shownUser, role.get(), address);
    return Response.redirect("/").withCookie(Request.SESSION_COOKIE + "=" + session.id()
        + "; Path=/; HttpOnly; SameSite=Strict").withCookie(devices.issue(user, Instant.now()));
  }

  /**
   * Who signs in: the peer, or the client a trusted proxy names. Behind a proxy no one named, all
   * clients share its address, so one person's wrong passwords slow everyone's sign-in: the log
   * says so once.
   */
  private String clientAddress(Request r) {
    String peer = r.clientAddress();
    List<String> forwardedFor = r.headers("X-Forwarded-For");
    if (!forwardedFor.isEmpty() && !proxies.contains(peer) && untrustedForwardingTold.compareAndSet(false, true)) {
      log.warn("console: requests from {} carry X-Forwarded-For, which is ignored: if {} is your reverse proxy,"
          + " start the console with --trusted-proxy {}, or every client behind it shares one sign-in throttle",
          peer, peer, peer);
    }
    return proxies.client(peer, forwardedFor);
  }

  private static HttpResponse encode(Response response) {
    HttpResponse http = HttpResponse.of(response.status(), response.contentType(), response.body())
        .with("Cache-Control", "no-store")
        .with("X-Content-Type-Options", "nosniff")
        .with("Referrer-Policy", "same-origin") // no-referrer would make browsers send "Origin: null"
        .with("Content-Security-Policy", "default-src 'self'; form-action 'self'; frame-ancestors 'none'");
    if (response.location() != null) {
      http = http.with("Location", response.location());
    }
    for (String cookie : response.cookies()) {
      http = http.withCookie(cookie);
    }
    return http;
  }
}
