package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.jdbc.DeadLetters.AuditEntry;
import io.txbox.jdbc.Scope;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.mariadb.MariaDbInboxStore;
import io.txbox.mariadb.MariaDbOutboxStore;
import io.txbox.server.console.ConsoleUsers;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.LocalPorts;
import io.txbox.testkit.TestMariaDb;
import io.txbox.testkit.TopicReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The operators' commands on a {@code jdbc:mariadb://} URL, against the machine's MariaDB and a
 * real Kafka broker: {@code txbox status}, {@code dead-letters} (outbox and inbox), {@code replay},
 * {@code audit} and the console (its own process, over HTTP), as PostgreSQL's tests run them.
 */
class MariaDbOperatorCommandsTest {
  private final KafkaBroker kafka = KafkaBroker.shared();
  private final String topic = "mariadb-ops-" + UUID.randomUUID();
  private final TestMariaDb db = TestMariaDb.create();
  private final MariaDbOutboxStore store = MariaDbOutboxStore.builder(db.dataSource()).buckets(8).build();
  private StringWriter out;

  MariaDbOperatorCommandsTest() {
    store.migrate();
  }

  @AfterEach
  void dropDatabase() {
    db.close();
  }

  @Test
  void deadLettersAreListedRetriedWithTheirIdsDiscardedAndAudited() throws Exception {
    List<Message> sent = List.of(event("k1", "OrderPlaced"), event("k2", "OrderPlaced"), event("k3", "OrderPaid"));
    try (Relay relay = Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .idleInterval(Duration.ofMillis(20)).build().start()) {
      send(sent); // to a topic that does not exist yet: the relay gives up on all three
      await().atMost(Duration.ofSeconds(30)).until(() -> store.operator().deadLetters().count(Scope.ALL) == 3);

      assertThat(run("dead-letters", "list")).isZero();
      assertThat(out.toString()).contains("3 dead letter(s) of the outbox (all)", "does not exist");
      assertThat(run("status", "--json")).as(out.toString()).isZero();
      JsonNode status = new ObjectMapper().readTree(out.toString());
      assertThat(status.toString()).contains("\"subscription\":\"default\"", "\"count\":3");

      assertThat(run("dead-letters", "retry", "--type", "OrderPlaced")).isZero();
      assertThat(out.toString()).contains("dry run: retry would touch 2 dead letter(s) (type OrderPlaced)");
      assertThat(store.operator().deadLetters().count(Scope.ALL)).as("a dry run changes nothing").isEqualTo(3);

      kafka.createTopic(topic, 2);
      assertThat(run("dead-letters", "retry", "--type", "OrderPlaced", "--execute")).isZero();
      assertThat(out.toString()).contains("retried 2 dead letter(s) (type OrderPlaced)");
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
        assertThat(reader.readUntil(r -> r.size() >= 2, Duration.ofSeconds(30))).extracting(TopicReader.Received::id)
            .containsExactlyInAnyOrder(sent.get(0).id().toString(), sent.get(1).id().toString());
      }

      assertThat(run("dead-letters", "discard", "--key", "k3", "--execute", "--operator", "ticket-42")).isZero();
      assertThat(store.operator().deadLetters().count(Scope.ALL)).isZero();
    }
    assertThat(run("audit")).isZero();
    assertThat(out.toString().split("\n")).hasSize(3);
    assertThat(out.toString()).contains("ticket-42", "discard outbox: 1 message(s), key k3",
        "retry outbox: 2 message(s), type OrderPlaced", "retry outbox (dry run): 2 message(s), type OrderPlaced");
  }

  @Test
  void aConsumersParkedKeyIsListedInTheStatusAndRetriedInOrderWhenAnOperatorAsks() throws Exception {
    Inbox inbox = Inbox.create(db.dataSource(), MariaDbInboxStore.builder().build());
    inbox.deadLetter("billing", event("order-7", "OrderPlaced"), new IllegalStateException("no such customer"), 10);
    inbox.receive("billing", event("order-7", "OrderPaid"), (tx, m, key) -> { });

    assertThat(run("dead-letters", "list", "--consumer", "billing")).isZero();
    assertThat(out.toString()).contains("2 dead or parked message(s) of consumer billing", "DEAD", "parked",
        "no such customer");
    assertThat(run("status")).isIn(0, 1);
    assertThat(out.toString()).contains("billing");

    assertThat(run("dead-letters", "retry", "--consumer", "billing", "--key", "order-7", "--execute")).isZero();
    assertThat(out.toString()).contains("asked consumer billing to retry 1 parked key(s), 2 message(s)");
    List<String> handled = new ArrayList<>();
    assertThat(inbox.runRetryRequests("billing", (tx, m, key) -> handled.add(m.type()))).isEqualTo(1);
    assertThat(handled).containsExactly("OrderPlaced", "OrderPaid");
    assertThat(store.operator().deadLetters().audit(10)).extracting(AuditEntry::target).containsExactly("inbox");
  }

  @Test
  void aReplayToASandboxDeliversTheKeysRelayedEventsThereInOrder() throws Exception {
    String sandbox = topic + "-sandbox";
    kafka.createTopic(topic, 2);
    kafka.createTopic(sandbox, 2);
    List<Message> sent = List.of(event("k1", "OrderPlaced"), event("k2", "OrderPlaced"), event("k1", "OrderPaid"),
        event("k1", "OrderShipped"));
    try (Relay relay = Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .idleInterval(Duration.ofMillis(20)).build().start()) {
      send(sent);
      await().atMost(Duration.ofSeconds(30)).until(() -> store.operator().status(1000).subscriptions().stream()
          .allMatch(s -> s.pending() == 0) && !store.operator().status(1000).subscriptions().isEmpty());
    }

    assertThat(run("replay", "--subscription", "default", "--key", "k1", "--to-destination", sandbox)).isZero();
    assertThat(out.toString()).contains("3 event(s) in scope", "dry run: nothing was published");
    assertThat(run("replay", "--subscription", "default", "--key", "k1", "--to-destination", sandbox,
        "--kafka-bootstrap-servers", kafka.bootstrapServers(), "--execute")).as(out.toString()).isZero();
    assertThat(out.toString()).contains("replayed 3 event(s)");
    try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), sandbox)) {
      assertThat(reader.readUntil(r -> r.size() >= 3, Duration.ofSeconds(30))).extracting(TopicReader.Received::id)
          .containsExactly(sent.get(0).id().toString(), sent.get(2).id().toString(), sent.get(3).id().toString());
    }
    assertThat(run("replay", "--subscription", "no-such")).isNotZero();
    assertThat(out.toString()).contains("invalid subscription 'no-such'", "known subscriptions: default");
  }

  @Test
  void theConsoleShowsAndDiscardsMariaDbsDeadLetters(@TempDir Path dir) throws Exception {
    Message poison = event("k9", "OrderPlaced");
    try (Relay relay = Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .idleInterval(Duration.ofMillis(20)).build().start()) {
      send(List.of(poison)); // to a topic that does not exist
      await().atMost(Duration.ofSeconds(30)).until(() -> store.operator().deadLetters().count(Scope.ALL) == 1);
    }
    Path users = dir.resolve("users.properties");
    Files.writeString(users, "ann = operator " + ConsoleUsers.hash("ann-password-1".toCharArray()) + "\n");
    int port = LocalPorts.free();
    try (RelayProcesses processes = new RelayProcesses()) {
      processes.startCommand(dir, "console", List.of(), Map.of(), List.of("--jdbc-url", db.jdbcUrl(),
          "--listen", "127.0.0.1:" + port, "--users", users.toString()));
      await().atMost(Duration.ofSeconds(60)).until(() -> processes.log(0).contains("txbox console on"));
      ConsoleClient console = new ConsoleClient(port);
      console.signIn("ann", "ann-password-1");

      assertThat(console.get("/")).contains("default");
      assertThat(console.get("/dead-letters")).contains(poison.id().toString(), "does not exist");
      String shown = console.get("/dead-letters/show?subscription=default&id=" + poison.id());
      assertThat(shown).contains("k9", "OrderPlaced");
      assertThat(console.post("/dead-letters/discard", "subscription=default&id=" + poison.id(), shown))
          .contains("is gone");
      assertThat(store.operator().deadLetters().count(Scope.ALL)).isZero();
      assertThat(store.operator().deadLetters().audit(10)).extracting(AuditEntry::operator).singleElement()
          .asString().contains("ann");
    }
  }

  @Test
  void aSchemaIsRefusedOnMariaDbByName() {
    assertThat(run("status", "--schema", "shop")).isEqualTo(2);
    assertThat(out.toString()).contains("--schema", "on MariaDB the tables live in the database");
  }

  /** A signed-in browser, as far as the console can tell: its session cookie and the page's CSRF token. */
  private static final class ConsoleClient {
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final int port;
    private String cookie;

    ConsoleClient(int port) {
      this.port = port;
    }

    void signIn(String user, String password) throws Exception {
      HttpResponse<String> signedIn = http.send(form("/login", "username=" + user + "&password=" + password).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(signedIn.statusCode()).as(signedIn.body()).isEqualTo(303);
      cookie = signedIn.headers().firstValue("Set-Cookie").orElseThrow().split(";")[0];
    }

    String get(String path) throws Exception {
      HttpResponse<String> page = http.send(HttpRequest.newBuilder(url(path)).header("Cookie", cookie).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(page.statusCode()).as(page.body()).isEqualTo(200);
      return page.body();
    }

    /** POSTs {@code body} with the CSRF token of {@code page}, the form it came from. */
    String post(String path, String body, String page) throws Exception {
      Matcher csrf = Pattern.compile("name=\"csrf\" value=\"([^\"]+)\"").matcher(page);
      assertThat(csrf.find()).as("a CSRF token on the page").isTrue();
      HttpResponse<String> done = http.send(form(path, body + "&csrf=" + csrf.group(1)).header("Cookie", cookie)
          .build(), HttpResponse.BodyHandlers.ofString());
      assertThat(done.statusCode()).as(done.body()).isEqualTo(200);
      return done.body();
    }

    private URI url(String path) {
      return URI.create("http://127.0.0.1:" + port + path);
    }

    private HttpRequest.Builder form(String path, String body) {
      return HttpRequest.newBuilder(url(path)).header("Content-Type", "application/x-www-form-urlencoded")
          .POST(HttpRequest.BodyPublishers.ofString(body));
    }
  }

  private void send(List<Message> messages) throws Exception {
    Outbox outbox = Outbox.create(store.writer());
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      for (Message m : messages) {
        outbox.send(c, m);
      }
      c.commit();
    }
  }

  private int run(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", db.jdbcUrl()));
    String[] argv = all.toArray(String[]::new);
    CommandLine cli = TxboxCommand.commandLine(argv, Map.of());
    out = new StringWriter();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(out, true));
    return cli.execute(argv);
  }

  private Message event(String key, String type) {
    return Message.builder().id(UUID.randomUUID()).type(type).destination(topic).key(key)
        .payload(key.getBytes(StandardCharsets.UTF_8)).build();
  }
}
