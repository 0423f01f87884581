package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.Replay;
import io.txbox.jdbc.Replay.Preview;
import io.txbox.jdbc.Replay.Request;
import io.txbox.jdbc.Replay.Result;
import io.txbox.jdbc.Scope;
import io.txbox.spi.Publisher;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code txbox replay}: publishes events still in the log again, by scope, at a bounded rate,
 * optionally to a sandbox destination. A dry run (count, first and last, counts by type) unless
 * {@code --execute} is given; both are recorded in the audit table.
 */
@Command(name = "replay", mixinStandardHelpOptions = true,
    description = {"Publishes events still in the log again, by scope, to their destination or to another one.",
        "A dry run (count, first and last, counts by type) unless --execute is given. Live subscriptions are",
        "not touched; events keep their ids, so consumers that already processed them ignore them: replay into",
        "a sandbox (--to-destination) to have them processed again."})
final class ReplayCommand implements Callable<Integer> {
  @Mixin DatabaseOptions database;
  @Mixin BrokerOptions brokers;
  @Mixin OperatorOptions operator;
  @Spec CommandSpec spec;

  @Option(names = "--subscription", description = "Only events this subscription has already delivered.")
  String subscription;

  @Option(names = "--destination", description = "Only events to this destination.")
  String destination;

  @Option(names = "--type", description = "Only events of this type.")
  String type;

  @Option(names = "--key", description = "Only events of this key.")
  String key;

  @Option(names = "--since", converter = InstantConverter.class, description = "Only events created at or after this instant (2026-11-23T10:00:00Z).")
  Instant since;

  @Option(names = "--until", converter = InstantConverter.class, description = "Only events created before this instant.")
  Instant until;

  @Option(names = "--from-position", description = "Only events at or after this log position.")
  Long fromPosition;

  @Option(names = "--to-position", description = "Only events at or before this log position.")
  Long toPosition;

  @Option(names = "--to-destination", description = "Publish to this destination instead of each event's own"
      + " (a sandbox such as orders.sandbox).")
  String toDestination;

  @Option(names = "--events-per-second", defaultValue = "" + Replay.DEFAULT_EVENTS_PER_SECOND,
      description = "Most events published per second, 1 to " + Replay.MAX_EVENTS_PER_SECOND
          + ". Default: ${DEFAULT-VALUE}.")
  int eventsPerSecond;

  @Option(names = "--batch-size", defaultValue = "" + Replay.DEFAULT_BATCH_SIZE,
      description = "Events read and published at once, 1 to " + Replay.MAX_BATCH_SIZE
          + ". Default: ${DEFAULT-VALUE}.")
  int batchSize;

  @Option(names = "--max-attempts", defaultValue = "" + Replay.DEFAULT_MAX_ATTEMPTS,
      description = "Attempts per batch before the replay stops, 1 to " + Replay.MAX_ATTEMPTS
          + ". Default: ${DEFAULT-VALUE}.")
  int maxAttempts;

  @Option(names = "--execute", description = "Publishes; without it the replay is a dry run.")
  boolean execute;

  @Option(names = "--config", description = "Properties file with option values.")
  String config;

  @Override
  public Integer call() throws Exception {
    Request request = new Request(scope(), toDestination, eventsPerSecond, batchSize, maxAttempts, operator.who());
    if (execute || brokers.given()) {
      brokers.check(); // a dry run needs no broker, but refuses the broker settings the real run would
    }
    PrintWriter out = spec.commandLine().getOut();
    try (HikariDataSource ds = database.operatorPool(spec)) {
      database.checkDatabase(ds);
      OperatorStore store = database.operatorStore(ds);
      Replay replay = store.replay();
      Preview preview = replay.preview(request.scope());
      print(out, request, preview);
      if (!execute) {
        out.println("dry run: nothing was published; add --execute to publish");
        store.deadLetters().record(request.operator(), "replay", "outbox", request.describe(), preview.count(), true);
        return 0;
      }
      return run(replay, request, preview.count(), out);
    } finally {
      out.flush();
    }
  }

  private int run(Replay replay, Request request, long total, PrintWriter out) throws InterruptedException {
    ProgressBar bar = new ProgressBar(spec.commandLine().getErr(), total);
    try (Publisher publisher = brokers.publisher()) {
      Result result = replay.replay(request, publisher, bar::show);
      bar.done();
      out.printf("replayed %d event(s) (%s) to %s%n", result.published(), TerminalText.of(request.describe()),
          brokers.describe());
      if (result.failed() > 0) {
        out.printf("%d event(s) were refused by the broker for good and skipped:%n", result.failed());
        result.failures().forEach(f -> out.println("  " + TerminalText.of(String.valueOf(f))));
        return 1;
      }
      return 0;
    }
  }

  private static void print(PrintWriter out, Request request, Preview preview) {
    out.printf("%d event(s) in scope (%s)%n", preview.count(), TerminalText.of(request.describe()));
    preview.first().ifPresent(e -> out.printf("  first: #%d %s %s key=%s to %s, created %s%n", e.position(), e.id(),
        TerminalText.of(e.type()), TerminalText.of(e.key()), TerminalText.of(e.destination()), e.createdAt()));
    preview.last().ifPresent(e -> out.printf("  last:  #%d %s %s key=%s to %s, created %s%n", e.position(), e.id(),
        TerminalText.of(e.type()), TerminalText.of(e.key()), TerminalText.of(e.destination()), e.createdAt()));
    preview.countsByType().forEach((t, n) -> out.printf("  %8d %s%n", n, TerminalText.of(t)));
    if (preview.count() > 0) {
      long seconds = Math.max(1, preview.count() / request.eventsPerSecond());
      out.printf("  at %d event(s)/s: about %d s%n", request.eventsPerSecond(), seconds);
    }
  }

  private Scope scope() {
    return Scope.ALL.withSubscription(subscription).withDestination(destination).withType(type).withKey(key)
        .withPeriod(since, until).withPositions(fromPosition, toPosition);
  }

  /** A progress bar on the error stream: redrawn in place on a terminal, a line per tenth otherwise. */
  static final class ProgressBar {
    private static final int WIDTH = 30;
    private final PrintWriter err;
    private final long total;
    private final boolean terminal = System.console() != null;
    private long shownTenths = -1;

    ProgressBar(PrintWriter err, long total) {
      this.err = err;
      this.total = Math.max(1, total);
    }

    void show(long published) {
      long percent = Math.min(100, published * 100 / total);
      if (!terminal && percent / 10 == shownTenths) {
        return;
      }
      shownTenths = percent / 10;
      int filled = (int) (percent * WIDTH / 100);
      err.printf("%s[%s%s] %3d%% %d/%d%s", terminal ? "\r" : "", "#".repeat(filled), " ".repeat(WIDTH - filled),
          percent, published, total, terminal ? "" : "\n");
      err.flush();
    }

    void done() {
      if (terminal) {
        err.println();
      }
    }
  }
}
