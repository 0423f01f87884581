package io.txbox.server.console;

import static io.txbox.server.console.Html.esc;

import io.txbox.Inbox;
import io.txbox.jdbc.DeadLetters;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.StoreStatus;
import io.txbox.spi.OpenTransaction;
import io.txbox.spi.Publisher;
import io.txbox.spi.support.Secrets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/** The console's pages: which path shows what, the overview with its chart, and the audit log. */
final class Pages implements AutoCloseable {
  /** Pending events counted per bucket for the overview, as {@code txbox status} does. */
  static final int PENDING_LIMIT_PER_BUCKET = 1_000;
  /** The oldest pending age past which the overview says degraded, as {@code txbox status}'s default. */
  static final Duration MAX_PENDING_AGE = Duration.ofMinutes(5);
  static final int CHART_MINUTES = 60;
  static final int AUDIT_SHOWN = 200;

  private final OperatorStore store;
  private final DeadLetterPages deadLetters;
  private final ReplayPage replay;

  Pages(OperatorStore store, Inbox inbox, Supplier<Publisher> publisher) {
    this.store = store;
    this.deadLetters = new DeadLetterPages(store, inbox);
    this.replay = new ReplayPage(store, publisher);
  }

  Response serve(Request r) {
    boolean post = r.isPost();
    return switch (r.path()) {
      case "/" -> post ? notAllowed() : Response.page(200, overview(r));
      case "/audit" -> post ? notAllowed() : Response.page(200, audit(r));
      case "/dead-letters" -> post ? notAllowed() : deadLetters.list(r);
      case "/dead-letters/show" -> post ? notAllowed() : deadLetters.show(r);
      case "/dead-letters/retry" -> post ? deadLetters.retry(r) : notAllowed();
      case "/dead-letters/discard" -> post ? deadLetters.discard(r) : notAllowed();
      case "/consumer" -> post ? notAllowed() : deadLetters.consumer(r);
      case "/consumer/retry" -> post ? deadLetters.retryKey(r) : notAllowed();
      case "/consumer/discard" -> post ? deadLetters.discardKey(r) : notAllowed();
      case "/replay" -> post ? replay.run(r) : replay.show(r);
      default -> Response.error(404, "no page " + r.path());
    };
  }

  private static Response notAllowed() {
    return Response.error(405, "method not allowed here");
  }

  String login(Request r, String error) {
    String message = error == null ? "" : "<p class=\"bad\" id=\"error\">" + esc(error) + "</p>";
    return Html.page("Sign in", r, message + "<form method=\"post\" action=\"/login\">"
        + "<label>User <input name=\"username\" id=\"username\" autocomplete=\"username\"></label> "
        + "<label>Password <input type=\"password\" name=\"password\" id=\"password\""
        + " autocomplete=\"current-password\"></label> <button type=\"submit\" id=\"sign-in\">Sign in</button></form>");
  }

  private String overview(Request r) {
    StoreStatus status = store.status(PENDING_LIMIT_PER_BUCKET);
    List<String> problems = status.problems(MAX_PENDING_AGE);
    StringBuilder html = new StringBuilder(problems.isEmpty() ? "<p class=\"ok\" id=\"health\">HEALTHY</p>"
        : "<p class=\"bad\" id=\"health\">DEGRADED</p><ul>");
    problems.forEach(p -> html.append("<li>").append(esc(p)).append("</li>"));
    html.append(problems.isEmpty() ? "" : "</ul>");
    html.append("<h2>Events written per minute, last hour</h2>").append(chart(store.writtenPerMinute(CHART_MINUTES)));
    html.append("<h2>Subscriptions</h2>").append(subscriptions(status));
    html.append("<h2>Relays and their buckets</h2>").append(relays(status));
    html.append("<h2>Stalled buckets</h2>").append(Html.table(List.of("subscription", "bucket", "owner", "attempts",
        "next attempt", "last error"), status.stalledBuckets().stream().map(b -> List.of(esc(b.subscription()),
        esc(b.bucket()), esc(b.owner()), esc(b.attempts()), esc(b.nextAttemptAt()),
        Html.capped(b.lastError(), DeadLetterPages.ERROR_CELL_LENGTH, "txbox status prints it all"))).toList(),
        "none"));
    html.append("<h2>Transaction holding delivery back</h2>").append(status.oldestOpenTransaction()
        .map(t -> openTransaction(t, r)).orElse("<p class=\"empty\">none</p>"));
    html.append("<h2>Dead letters</h2>").append(deadLetters.summary(status));
    return Html.page("Overview", r, html.toString());
  }

  /**
   * The transaction holding delivery back: pid (what {@code pg_terminate_backend} takes), age, user,
   * database and state for anyone; its query text, which may hold literal values, for a signed-in
   * operator only, masked and cut short.
   */
  private static String openTransaction(OpenTransaction t, Request r) {
    boolean operator = r.session().filter(s -> s.role() == ConsoleUsers.Role.OPERATOR).isPresent();
    String table = Html.table(List.of("pid", "open for", "user", "database", "application", "state"),
        List.of(List.of(esc(t.pid()), esc(t.age().truncatedTo(ChronoUnit.MILLIS)), esc(t.user()), esc(t.database()),
            esc(t.application()), esc(t.state()))), "none");
    return table + (operator ? "<pre id=\"open-transaction-query\">" + esc(Secrets.maskSql(t.query())) + "</pre>"
        : "<p class=\"empty\">its query text is shown to operators only</p>");
  }

  private static String subscriptions(StoreStatus status) {
    return Html.table(List.of("subscription", "pending", "oldest pending", "buckets", "without a relay"),
        status.subscriptions().stream().map(s -> List.of(esc(s.name()), esc(s.pending() + (s.capped() ? "+" : "")),
            esc(s.oldestPendingAge().truncatedTo(ChronoUnit.MILLIS)), esc(s.buckets()), esc(s.unownedBuckets())))
            .toList(), "no subscription yet: no relay has run");
  }

  private static String relays(StoreStatus status) {
    List<List<String>> rows = new ArrayList<>();
    for (StoreStatus.Subscription s : status.subscriptions()) {
      s.relays().forEach(relay -> rows.add(List.of(esc(s.name()), esc(relay.instance()), esc(relay.buckets()),
          esc(relay.leaseUntil()))));
    }
    return Html.table(List.of("subscription", "relay instance", "buckets", "lease until"), rows, "no relay holds a lease");
  }

  /** An SVG bar per minute; the tallest bar is the busiest minute, its count written beside the chart. */
  static String chart(List<StoreStatus.Minute> minutes) {
    Map<Instant, Long> byMinute = new HashMap<>();
    minutes.forEach(m -> byMinute.put(m.start(), m.events()));
    long max = Math.max(1, minutes.stream().mapToLong(StoreStatus.Minute::events).max().orElse(0));
    long total = minutes.stream().mapToLong(StoreStatus.Minute::events).sum();
    Instant first = Instant.now().truncatedTo(ChronoUnit.MINUTES).minus(CHART_MINUTES - 1, ChronoUnit.MINUTES);
    StringBuilder svg = new StringBuilder("<svg id=\"chart\" width=\"" + CHART_MINUTES * 10 + "\" height=\"104\""
        + " role=\"img\" aria-label=\"events written per minute\"><rect width=\"100%\" height=\"100%\" fill=\"#f6f8fa\"/>");
    for (int i = 0; i < CHART_MINUTES; i++) {
      Instant minute = first.plus(i, ChronoUnit.MINUTES);
      long events = byMinute.getOrDefault(minute, 0L);
      long height = events * 100 / max;
      svg.append("<rect x=\"").append(i * 10 + 1).append("\" y=\"").append(102 - height).append("\" width=\"8\" height=\"")
          .append(height).append("\" fill=\"#1f6fb2\"><title>").append(esc(minute)).append(": ").append(events)
          .append(" events</title></rect>");
    }
    return svg.append("</svg><p>").append(total).append(" events in the last hour, at most ")
        .append(byMinute.isEmpty() ? 0 : max).append(" in a minute (counted from the log: events the janitor"
            + " removed are not shown)</p>").toString();
  }

  private String audit(Request r) {
    List<DeadLetters.AuditEntry> entries = store.deadLetters().audit(AUDIT_SHOWN);
    return Html.page("Audit", r, Html.table(List.of("at", "operator", "action", "target", "scope", "count", "dry run"),
        entries.stream().map(e -> List.of(esc(e.at()), esc(e.operator()), esc(e.action()), esc(e.target()),
            esc(e.scope()), esc(e.count()), e.dryRun() ? "dry run" : "")).toList(), "nothing recorded yet"));
  }

  @Override
  public void close() {
    replay.close();
  }
}
