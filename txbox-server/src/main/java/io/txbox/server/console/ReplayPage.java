package io.txbox.server.console;

import static io.txbox.server.console.Html.esc;

import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.Replay;
import io.txbox.jdbc.Replay.Preview;
import io.txbox.jdbc.Scope;
import io.txbox.server.console.ConsoleUsers.Role;
import io.txbox.spi.Publisher;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * Replay from the console: a preview of a scope (count, first, last, counts by type), then, for an
 * operator, the replay itself, one at a time, in the background, with its progress on this page.
 */
final class ReplayPage implements AutoCloseable {
  private static final List<String> SCOPE_FIELDS = List.of("subscription", "destination", "type", "key", "since",
      "until", "to-destination", "events-per-second");

  private final Replay replay;
  private final Supplier<Publisher> publisher;
  private final ExecutorService runner = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "txbox-console-replay");
    t.setDaemon(true);
    return t;
  });
  private volatile String progress = "no replay has run since the console started";
  private volatile boolean running;

  ReplayPage(OperatorStore store, Supplier<Publisher> publisher) {
    this.replay = store.replay();
    this.publisher = publisher;
  }

  Response show(Request r) {
    StringBuilder html = new StringBuilder("<p class=\"notice\" id=\"progress\">").append(esc(progress)).append("</p>");
    html.append("<form method=\"get\" action=\"/replay\">");
    SCOPE_FIELDS.forEach(f -> html.append(Html.field(f, f, r.param(f))));
    html.append(Html.hidden("preview", "yes")).append("<button type=\"submit\" id=\"preview\">Preview</button></form>");
    if (r.param("preview") != null) {
      Replay.Request request = request(r);
      // A read, as every GET is: it writes nothing, not even an audit row, so that no viewer (nor any
      // page, without a users file) can push real entries off the audit page by previewing.
      Preview preview = replay.preview(request.scope());
      html.append("<h2>").append(preview.count()).append(" event(s): ").append(esc(request.describe())).append("</h2>");
      preview.first().ifPresent(e -> html.append("<p>first: #").append(e.position()).append(' ').append(esc(e.type()))
          .append(" key ").append(esc(e.key())).append(", created ").append(esc(e.createdAt())).append("</p>"));
      preview.last().ifPresent(e -> html.append("<p>last: #").append(e.position()).append(' ').append(esc(e.type()))
          .append(" key ").append(esc(e.key())).append(", created ").append(esc(e.createdAt())).append("</p>"));
      html.append(Html.table(List.of("type", "events"), preview.countsByType().entrySet().stream()
          .map(e -> List.of(esc(e.getKey()), esc(e.getValue()))).toList(), "nothing in this scope"));
      html.append(runButton(r, preview.count()));
    }
    return Response.page(200, Html.page("Replay", r, html.toString()));
  }

  private String runButton(Request r, long count) {
    if (count == 0 || r.session().map(s -> s.role() != Role.OPERATOR).orElse(true)) {
      return "";
    }
    if (publisher == null) {
      return "<p class=\"empty\">to run it, start the console with the broker options of txbox relay</p>";
    }
    StringBuilder fields = new StringBuilder();
    SCOPE_FIELDS.forEach(f -> fields.append(Html.hidden(f, r.param(f))));
    return Html.form("/replay", r, fields.toString(), "Replay these " + count + " event(s)");
  }

  synchronized Response run(Request r) {
    if (publisher == null) {
      return Response.error(409, "no broker: start the console with the broker options of txbox relay to replay");
    }
    if (running) {
      return Response.error(409, "a replay is running: wait for it to finish");
    }
    Replay.Request request = request(r);
    running = true;
    progress = "started: " + request.describe();
    runner.execute(() -> replayInBackground(request));
    return Response.redirect("/replay");
  }

  private void replayInBackground(Replay.Request request) {
    try (Publisher p = publisher.get()) {
      long total = replay.preview(request.scope()).count();
      Replay.Result result = replay.replay(request, p,
          published -> progress = "running: " + published + " of " + total + " published (" + request.describe() + ")");
      progress = "done: " + result.published() + " published, " + result.failed() + " refused by the broker ("
          + request.describe() + ")" + (result.failures().isEmpty() ? "" : "; first refusal: " + result.failures().get(0));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      progress = "stopped: the console is shutting down";
    } catch (RuntimeException e) {
      progress = "failed: " + e.getMessage();
    } finally {
      running = false;
    }
  }

  private static Replay.Request request(Request r) {
    Scope scope = Scope.ALL.withSubscription(r.param("subscription")).withDestination(r.param("destination"))
        .withType(r.param("type")).withKey(r.param("key")).withPeriod(instant(r, "since"), instant(r, "until"));
    String rate = r.param("events-per-second");
    int eventsPerSecond = rate == null ? Replay.DEFAULT_EVENTS_PER_SECOND : parse(rate);
    return Replay.Request.of(scope, r.operator()).withToDestination(r.param("to-destination"))
        .withEventsPerSecond(eventsPerSecond);
  }

  private static int parse(String rate) {
    try {
      return Integer.parseInt(rate);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("events-per-second must be a whole number, was '" + rate + "'");
    }
  }

  private static Instant instant(Request r, String name) {
    String value = r.param(name);
    try {
      return value == null ? null : Instant.parse(value);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException(name + " must be an instant such as 2026-11-23T10:00:00Z, was '" + value + "'");
    }
  }

  @Override
  public void close() {
    runner.shutdownNow();
  }
}
