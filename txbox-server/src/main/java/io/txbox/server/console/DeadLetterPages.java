package io.txbox.server.console;

import static io.txbox.server.console.Html.esc;

import io.txbox.Inbox;
import io.txbox.ParkedMessage;
import io.txbox.jdbc.DeadLetters;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.Scope;
import io.txbox.jdbc.StoreStatus;
import io.txbox.server.PayloadText;
import io.txbox.server.console.ConsoleUsers.Role;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** Dead letters: the outbox's by scope, one with its payload, a consumer's parked keys; retry and discard. */
final class DeadLetterPages {
  /** Most dead letters or parked messages a page lists. */
  static final int LISTED = 200;

  private final DeadLetters deadLetters;
  private final Inbox inbox;

  static final int ERROR_CELL_LENGTH = 300;
  /** Most characters of a payload, an error or the headers that the page of one dead letter shows. */
  static final int SHOWN_TEXT = 64 * 1024;

  DeadLetterPages(OperatorStore store, Inbox inbox) {
    this.deadLetters = store.deadLetters();
    this.inbox = inbox;
  }

  /** Dead letters per subscription and per consumer, linked to their pages. */
  String summary(StoreStatus status) {
    String outbox = Html.table(List.of("subscription", "dead letters", "newest", "why the newest"),
        status.outboxDeadLetters().stream().map(d -> List.of("<a href=\"/dead-letters?subscription="
            + url(d.subscription()) + "\">" + esc(d.subscription()) + "</a>", esc(d.count()), esc(d.newest()),
            esc(shortened(d.newestError())))).toList(), "no outbox dead letters");
    String consumers = Html.table(List.of("consumer", "dead", "parked behind them", "keys"),
        status.inboxDeadLetters().stream().map(d -> List.of("<a href=\"/consumer?name=" + url(d.consumer()) + "\">"
            + esc(d.consumer()) + "</a>", esc(d.dead()), esc(d.parked()), esc(d.keys()))).toList(),
        "no consumer dead letters");
    return outbox + consumers;
  }

  Response list(Request r) {
    Scope scope = Scope.ALL.withSubscription(r.param("subscription")).withType(r.param("type"))
        .withKey(r.param("key")).withErrorContaining(r.param("error"));
    boolean operator = isOperator(r);
    List<List<String>> rows = deadLetters.list(scope, LISTED).stream().map(e -> List.of(esc(e.deadLetteredAt()),
        esc(e.subscription()), "<a class=\"show\" href=\"/dead-letters/show?subscription=" + url(e.subscription())
            + "&amp;id=" + e.id() + "\">" + e.id() + "</a>", esc(e.type()), esc(e.key()), esc(e.destination()),
        esc(e.attempts()), esc(shortened(e.error())), operator ? actions(r, e.subscription(), e.id()) : "")).toList();
    String filter = "<form method=\"get\" action=\"/dead-letters\">" + Html.field("Subscription", "subscription",
        r.param("subscription")) + Html.field("Type", "type", r.param("type")) + Html.field("Key", "key", r.param("key"))
        + Html.field("Error contains", "error", r.param("error")) + "<button type=\"submit\">Filter</button></form>";
    String body = filter + "<p>" + deadLetters.count(scope) + " dead letter(s) (" + esc(scope.describe()) + ")</p>"
        + Html.table(List.of("dead-lettered", "subscription", "event", "type", "key", "destination", "attempts",
            "error", ""), rows, "no dead letters in this scope");
    return Response.page(200, Html.page("Dead letters", r, body));
  }

  private static String actions(Request r, String subscription, UUID id) {
    String fields = Html.hidden("subscription", subscription) + Html.hidden("id", id);
    return Html.form("/dead-letters/retry", r, fields, "Retry") + " " + Html.form("/dead-letters/discard", r, fields,
        "Discard");
  }

  Response show(Request r) {
    String subscription = required(r, "subscription");
    UUID id = id(r);
    var details = deadLetters.show(subscription, id);
    if (details.isEmpty()) {
      return Response.error(404, "no dead letter of event " + id + " in subscription " + subscription);
    }
    var d = details.get();
    var e = d.entry();
    Map<String, Object> fields = new LinkedHashMap<>();
    fields.put("subscription", e.subscription());
    fields.put("position", e.position());
    fields.put("type", e.type() + " v" + e.version());
    fields.put("key", e.key());
    fields.put("destination", e.destination());
    fields.put("created at", d.createdAt());
    fields.put("dead-lettered at", e.deadLetteredAt());
    fields.put("attempts", e.attempts());
    fields.put("content type", d.contentType());
    List<List<String>> rows = new ArrayList<>();
    fields.forEach((k, v) -> rows.add(List.of(esc(k), esc(v))));
    String whole = "txbox dead-letters show --subscription " + subscription + " --id " + id + " prints it all";
    rows.add(List.of("error", Html.capped(e.error(), SHOWN_TEXT, whole)));
    rows.add(List.of("headers", Html.capped(d.headersJson(), SHOWN_TEXT, whole)));
    String body = Html.table(List.of("field", "value"), rows, "") + "<h2>Payload (" + e.payloadBytes() + " bytes)</h2><pre"
        + " id=\"payload\">" + Html.capped(PayloadText.of(d.payload()), SHOWN_TEXT, whole) + "</pre>"
        + (isOperator(r) ? actions(r, subscription, id) : "");
    return Response.page(200, Html.page("Dead letter " + id, r, body));
  }

  Response retry(Request r) {
    Scope one = Scope.ALL.withSubscription(required(r, "subscription")).withId(id(r));
    int retried = deadLetters.retry(one, r.operator());
    return done(r, "Retried", retried == 0 ? "nothing to retry: it was retried or discarded already"
        : "event " + one.id() + " is back in the log with its id; the relay sends it again");
  }

  Response discard(Request r) {
    Scope one = Scope.ALL.withSubscription(required(r, "subscription")).withId(id(r));
    int discarded = deadLetters.discard(one, r.operator());
    return done(r, "Discarded", discarded == 0 ? "nothing to discard: it was retried or discarded already"
        : "the dead letter of event " + one.id() + " is gone");
  }

  Response consumer(Request r) {
    String consumer = required(r, "name");
    boolean operator = isOperator(r);
    List<ParkedMessage> parked = sql(() -> inbox.parked(consumer, LISTED));
    List<List<String>> rows = parked.stream().map(p -> List.of(esc(p.queueKey()), p.dead() ? "<b>dead</b>" : "parked",
        esc(p.message().id()), esc(p.message().type()), esc(p.attempts()), esc(shortened(p.lastError())), esc(p.receivedAt()),
        operator && p.dead() ? keyActions(r, consumer, p.queueKey()) : "")).toList();
    String body = "<p>A dead message holds its key: later messages of the key are parked behind it, in order."
        + " Retry asks the running consumer, which has the handler, to process the key again.</p>"
        + Html.table(List.of("key", "status", "message", "type", "attempts", "last error", "received", ""), rows,
            "nothing dead or parked");
    return Response.page(200, Html.page("Consumer " + consumer, r, body));
  }

  private static String keyActions(Request r, String consumer, String key) {
    String fields = Html.hidden("consumer", consumer) + Html.hidden("key", key);
    return Html.form("/consumer/retry", r, fields, "Retry key") + " " + Html.form("/consumer/discard", r, fields,
        "Discard key");
  }

  Response retryKey(Request r) {
    String consumer = required(r, "consumer");
    String key = required(r, "key");
    boolean asked = sql(() -> inbox.requestRetry(consumer, key, r.operator()));
    deadLetters.record(r.operator(), "retry", "inbox", "consumer " + consumer + ", key " + key, asked ? 1 : 0, false);
    return done(r, "Retry requested", asked ? "consumer " + consumer + " retries key " + key
        + " in order within a second or so, if it is running" : "key " + key + " is not parked");
  }

  Response discardKey(Request r) {
    String consumer = required(r, "consumer");
    String key = required(r, "key");
    int dropped = sql(() -> inbox.discard(consumer, key));
    deadLetters.record(r.operator(), "discard", "inbox", "consumer " + consumer + ", key " + key, dropped, false);
    return done(r, "Discarded", dropped + " message(s) of key " + key + " dropped; the key flows again");
  }

  private static Response done(Request r, String title, String message) {
    return Response.page(200, Html.page(title, r, "<p class=\"notice\" id=\"notice\">" + esc(message)
        + "</p><p><a href=\"/dead-letters\">Back to the dead letters</a></p>"));
  }

  private static boolean isOperator(Request r) {
    return r.session().map(s -> s.role() == Role.OPERATOR).orElse(false);
  }

  static String required(Request r, String name) {
    String value = r.param(name);
    if (value == null) {
      throw new IllegalArgumentException("missing parameter '" + name + "'");
    }
    return value;
  }

  private static UUID id(Request r) {
    try {
      return UUID.fromString(required(r, "id"));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("parameter 'id' must be an event id (a UUID)");
    }
  }

  private static String url(String value) {
    return esc(URLEncoder.encode(value, StandardCharsets.UTF_8));
  }

  private interface Query<T> {
    T run() throws SQLException;
  }

  private static <T> T sql(Query<T> query) {
    try {
      return query.run();
    } catch (SQLException e) {
      throw new IllegalStateException("database: " + e.getMessage(), e);
    }
  }

  /** An error as a cell shows it: the first {@value #ERROR_CELL_LENGTH} characters; the dead letter's page has it all. */
  private static String shortened(String error) {
    if (error == null) {
      return "";
    }
    return error.length() <= ERROR_CELL_LENGTH ? error : error.substring(0, ERROR_CELL_LENGTH) + "…";
  }
}
