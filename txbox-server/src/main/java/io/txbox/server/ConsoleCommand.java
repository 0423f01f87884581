package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.txbox.Inbox;
import io.txbox.jdbc.OperatorStore;
import io.txbox.server.console.Console;
import io.txbox.server.console.ConsoleUsers;
import io.txbox.spi.Publisher;
import io.txbox.spi.support.Secrets;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code txbox console}: the web console, until stopped; {@code txbox console hash-password} for the users file. */
@Command(name = "console", mixinStandardHelpOptions = true, subcommands = ConsoleCommand.HashPassword.class,
    description = {"Serves the web console: overview, dead letters (show, retry, discard), replay, audit.",
        "Listens on 127.0.0.1 unless --listen says otherwise, which needs --users. Without --users everyone who",
        "reaches it is a viewer; with it, users sign in as viewers or operators. Give the broker options of",
        "txbox relay to run replays from it."})
final class ConsoleCommand implements Callable<Integer> {
  private static final Logger log = LoggerFactory.getLogger(ConsoleCommand.class);
  @Mixin DatabaseOptions database;
  @Mixin BrokerOptions brokers;
  @Mixin HttpOptions http;
  @Spec CommandSpec spec;

  @Option(names = "--listen", defaultValue = "127.0.0.1:8090",
      description = "host:port to listen on. Default: ${DEFAULT-VALUE}.")
  String listen;

  @Option(names = "--users", description = "Users file: 'name = viewer|operator <hash>' per line"
      + " (txbox console hash-password prints a hash).")
  Path users;

  @Option(names = "--session-timeout", converter = DurationConverter.class, defaultValue = "8h",
      description = "How long a sign-in lasts, 1m to 7d. Default: ${DEFAULT-VALUE}.")
  Duration sessionTimeout;

  @Option(names = "--allowed-host", split = ",", description = "Host name clients reach the console by (a proxy's"
      + " public name), beyond localhost and the --listen address; repeatable or comma-separated. Requests for"
      + " any other host are refused.")
  List<String> allowedHosts = new ArrayList<>();

  @Option(names = "--trusted-proxy", split = ",", description = "Reverse proxy, by address or range"
      + " (10.0.0.5, 10.0.0.0/8), whose X-Forwarded-For names the client signing in; repeatable or comma-separated."
      + " From any other peer the header is ignored.")
  List<String> trustedProxies = new ArrayList<>();

  @Option(names = "--threads", defaultValue = "" + Console.DEFAULT_THREADS,
      description = "Pages built at once, 4 to 256; a request takes a thread only once it has arrived whole."
          + " Default: ${DEFAULT-VALUE}.")
  int threads;

  @Option(names = "--request-timeout", converter = DurationConverter.class, defaultValue = "5s",
      description = "How long a client may take to send its request, and to take the answer, 1s to 60s;"
          + " a slower one is cut off. Default: ${DEFAULT-VALUE}.")
  Duration requestTimeout;

  @Option(names = "--config", description = "Properties file with option values.")
  String config;

  @Override
  public Integer call() throws Exception {
    Console.Settings settings = new Console.Settings(address(listen), users == null ? null : ConsoleUsers.load(users),
        sessionTimeout, Set.copyOf(allowedHosts), threads, trustedProxies, requestTimeout);
    Supplier<Publisher> publisher = brokers.given() ? brokers::publisher : null;
    if (publisher != null) {
      brokers.check(); // now, not at the first replay
    }
    http.check();
    HikariDataSource ds = database.operatorPool(spec);
    Console console = null;
    Optional<OpsEndpoint> endpoint;
    try {
      database.checkDatabase(ds);
      OperatorStore store = database.operatorStore(ds);
      Inbox inbox = Inbox.create(ds, database.inboxStore());
      console = Console.start(settings, store, inbox, publisher);
      endpoint = serveOps(store);
    } catch (Exception e) {
      if (console != null) {
        console.close();
      }
      ds.close();
      throw e;
    }
    Console running = console;
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      endpoint.ifPresent(OpsEndpoint::close);
      running.close();
      ds.close();
      stopped.countDown();
    }, "txbox-console-shutdown"));
    InetSocketAddress at = console.address();
    spec.commandLine().getOut().printf("txbox console on http://%s:%d/ (%s; replays %s)%n", at.getHostString(),
        at.getPort(), users == null ? "no users file: everyone is a viewer" : "sign-in required",
        publisher == null ? "preview only, no broker given" : "to " + brokers.describe());
    spec.commandLine().getOut().flush();
    stopped.await();
    return 0;
  }

  /**
   * The console's metrics and health probes, on a port of their own (the console's pages may sit
   * behind a sign-in): live while it serves, ready while it can read the database.
   */
  private Optional<OpsEndpoint> serveOps(OperatorStore store) {
    PrometheusMeterRegistry registry = HttpOptions.registry();
    HttpOptions.bindProcessMeters(registry, store.outboxName());
    return http.start("127.0.0.1", registry, () -> OpsEndpoint.Verdict.of(true, "console", "serving"),
        OpsEndpoint.refreshed(Duration.ofSeconds(5), () -> {
          try {
            store.status(1);
            return OpsEndpoint.Verdict.of(true, "database", "reachable");
          } catch (RuntimeException e) {
            log.warn("console: readiness: cannot read the status: {}", Secrets.mask(e.getMessage()));
            return OpsEndpoint.Verdict.of(false, "database", "cannot read the status (the console's log says why)");
          }
        }));
  }

  static InetSocketAddress address(String listen) {
    int colon = listen.lastIndexOf(':');
    try {
      int port = Integer.parseInt(listen.substring(colon + 1));
      if (colon < 1 || port < 0 || port > 65_535) {
        throw new NumberFormatException();
      }
      return new InetSocketAddress(listen.substring(0, colon), port);
    } catch (NumberFormatException | IndexOutOfBoundsException e) {
      throw new IllegalArgumentException("invalid --listen: host:port such as 127.0.0.1:8090, was '" + listen + "'");
    }
  }

  /** Prints a hash of the password read from standard input, for the users file. */
  @Command(name = "hash-password", mixinStandardHelpOptions = true,
      description = "Reads a password from standard input and prints its hash for the --users file.")
  static final class HashPassword implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Override
    public Integer call() throws Exception {
      char[] password = System.console() != null ? System.console().readPassword("password: ") : stdinLine();
      if (password == null || password.length < 12) {
        throw new IllegalArgumentException("invalid password: at least 12 characters");
      }
      spec.commandLine().getOut().println(ConsoleUsers.hash(password));
      return 0;
    }

    private static char[] stdinLine() throws java.io.IOException {
      String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      return line == null ? null : line.toCharArray();
    }
  }
}
