package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.jdbc.DeadLetters;
import io.txbox.jdbc.Scope;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TopicReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code txbox dead-letters} and {@code txbox audit} on real dead letters: a relay gives up on
 * events for a topic that does not exist yet; an operator looks, tries a dry run, creates the
 * topic and retries, and the events reach Kafka.
 */
class DeadLettersCommandTest {
  private final KafkaBroker kafka = KafkaBroker.shared();
  private final String topic = "dead-letters-" + UUID.randomUUID();
  private final OutboxSchema schema = new OutboxSchema();
  private final PostgresOutboxStore store = schema.store;
  private StringWriter out;

  @AfterEach
  void dropSchema() {
    schema.close();
  }

  @Test
  void aDryRunChangesNothingAndAnExecutedRetryDeliversTheScopeWithItsIds() throws Exception {
    List<Message> sent = List.of(event("k1", "OrderPlaced"), event("k2", "OrderPlaced"), event("k3", "OrderPaid"));
    try (Relay relay = Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .idleInterval(Duration.ofMillis(20)).build().start()) {
      schema.send(sent);
      await().atMost(Duration.ofSeconds(30)).until(() -> store.operator().deadLetters().count(Scope.ALL) == 3);

      assertThat(run("dead-letters", "list")).isZero();
      assertThat(out.toString()).contains("3 dead letter(s) of the outbox (all)", "does not exist");

      assertThat(run("dead-letters", "retry", "--type", "OrderPlaced")).isZero();
      assertThat(out.toString()).contains("dry run: retry would touch 2 dead letter(s) (type OrderPlaced)");
      assertThat(store.operator().deadLetters().count(Scope.ALL)).as("a dry run changes nothing").isEqualTo(3);
      assertThat(count("SELECT count(*) FROM {schema}.txbox_outbox")).isEqualTo(3);

      kafka.createTopic(topic, 2);
      assertThat(run("dead-letters", "retry", "--type", "OrderPlaced", "--execute")).isZero();
      assertThat(out.toString()).contains("retried 2 dead letter(s) (type OrderPlaced)");
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
        List<TopicReader.Received> got = reader.readUntil(r -> r.size() >= 2, Duration.ofSeconds(30));
        assertThat(got).extracting(TopicReader.Received::id)
            .containsExactlyInAnyOrder(sent.get(0).id().toString(), sent.get(1).id().toString());
      }

      assertThat(run("dead-letters", "discard", "--key", "k3")).isZero();
      assertThat(out.toString()).contains("dry run: discard would touch 1 dead letter(s) (key k3)");
      assertThat(store.operator().deadLetters().count(Scope.ALL)).as("one message is a dry run too").isOne();
      assertThat(run("dead-letters", "discard", "--key", "k3", "--execute", "--operator", "ticket-42")).isZero();
      assertThat(store.operator().deadLetters().count(Scope.ALL)).isZero();
    }

    assertThat(run("audit")).isZero();
    String[] lines = out.toString().split("\n");
    assertThat(lines).hasSize(4);
    String osUser = ProcessHandle.current().info().user().orElseThrow();
    assertThat(lines[0]).contains("ticket-42 (os user " + osUser + ") discard outbox: 1 message(s), key k3");
    assertThat(lines[1]).contains("os user " + osUser + " discard outbox (dry run): 1 message(s), key k3");
    assertThat(lines[2]).contains("retry outbox: 2 message(s), type OrderPlaced");
    assertThat(lines[3]).contains("retry outbox (dry run): 2 message(s), type OrderPlaced");
  }

  @Test
  void theOnlyDeadLetterIsNotDiscardedWithoutExecute() throws Exception {
    schema.deadLetter("k1", "OrderPlaced", "refused");

    assertThat(run("dead-letters", "discard")).isZero();

    assertThat(out.toString()).contains("dry run: discard would touch 1 dead letter(s) (all)");
    assertThat(store.operator().deadLetters().count(Scope.ALL)).isOne();
  }

  @Test
  void outboxFiltersGivenWithAConsumerAreRefusedAndNothingIsDeleted() throws Exception {
    Inbox inbox = Inbox.create(schema.db.dataSource(), PostgresInboxStore.builder().schema(schema.name()).build());
    inbox.deadLetter("billing", event("order-8", "OrderPlaced"), new IllegalStateException("no such customer"), 10);

    assertThat(run("dead-letters", "discard", "--consumer", "billing", "--key", "order-8", "--type", "NoSuchType",
        "--error", "x", "--since", "2030-01-01T00:00:00Z", "--execute")).isEqualTo(2);
    assertThat(out.toString()).contains("invalid --type, --since, --error: with --consumer");
    assertThat(run("dead-letters", "list", "--consumer", "billing", "--destination", "orders")).isEqualTo(2);
    assertThat(inbox.parked("billing", 10)).hasSize(1);
  }

  @Test
  void aRangeThatEndsBeforeItStartsIsRefused() {
    assertThat(run("dead-letters", "list", "--since", "2026-02-01T00:00:00Z", "--until", "2026-01-01T00:00:00Z"))
        .isEqualTo(2);
    assertThat(out.toString()).contains("invalid --since (TXBOX_SINCE): since must be before until");
  }

  @Test
  void controlCharactersFromEventsAndBrokersAreShownAsEscapesNotSentToTheTerminal() throws Exception {
    schema.deadLetter("\u001b]0;pwned\u0007\u001b[2J", "Order\u202egnp.exe", "refused\nsubscription default: 0");

    assertThat(run("dead-letters", "list")).isZero();

    assertThat(out.toString()).doesNotContain("\u001b", "\u0007", "\u202e")
        .contains("key=\\u001b]0;pwned\\u0007\\u001b[2J", "Order\\u202egnp.exe", "refused\\u000asubscription default: 0");
    assertThat(out.toString().lines()).as(out.toString()).hasSize(2);
  }

  @Test
  void aConsumersParkedKeyIsListedAndDiscardedOnlyWithExecute() throws Exception {
    Inbox inbox = Inbox.create(schema.db.dataSource(), PostgresInboxStore.builder().schema(schema.name()).build());
    inbox.deadLetter("billing", event("order-7", "OrderPlaced"), new IllegalStateException("no such customer"), 10);
    inbox.receive("billing", event("order-7", "OrderPaid"), (tx, m, key) -> { });

    assertThat(run("dead-letters", "list", "--consumer", "billing")).isZero();
    assertThat(out.toString()).contains("2 dead or parked message(s) of consumer billing", "DEAD", "parked",
        "no such customer");
    assertThat(run("dead-letters", "discard", "--consumer", "billing", "--key", "order-7")).isZero();
    assertThat(out.toString()).contains("dry run: discard would drop 2 message(s)");
    assertThat(inbox.parked("billing", 10)).hasSize(2);

    assertThat(run("dead-letters", "discard", "--consumer", "billing", "--key", "order-7", "--execute")).isZero();
    assertThat(inbox.parked("billing", 10)).isEmpty();
    assertThat(store.operator().deadLetters().audit(10)).extracting(DeadLetters.AuditEntry::dryRun).containsExactly(false, true);
  }

  @Test
  void aConsumersParkedKeyIsRetriedInOrderByTheConsumerWhenAnOperatorAsks() throws Exception {
    Inbox inbox = Inbox.create(schema.db.dataSource(), PostgresInboxStore.builder().schema(schema.name()).build());
    inbox.deadLetter("billing", event("order-7", "OrderPlaced"), new IllegalStateException("no such customer"), 10);
    inbox.receive("billing", event("order-7", "OrderPaid"), (tx, m, key) -> { });
    List<String> handled = new ArrayList<>();

    assertThat(run("dead-letters", "retry", "--consumer", "billing")).isZero();
    assertThat(out.toString()).contains("dry run: retry would process 2 message(s) of 1 key(s)");
    assertThat(inbox.runRetryRequests("billing", (tx, m, key) -> handled.add(m.type()))).as("nothing asked yet").isZero();

    assertThat(run("dead-letters", "retry", "--consumer", "billing", "--key", "order-7", "--execute")).isZero();
    assertThat(out.toString()).contains("asked consumer billing to retry 1 parked key(s), 2 message(s)");
    // what the consumer's running subscriber does every second (proven per broker by the transport contract)
    assertThat(inbox.runRetryRequests("billing", (tx, m, key) -> handled.add(m.type()))).isEqualTo(1);
    assertThat(handled).containsExactly("OrderPlaced", "OrderPaid");

    assertThat(run("dead-letters", "retry", "--consumer", "billing", "--key", "order-7")).isEqualTo(1);
    assertThat(out.toString()).contains("nothing to retry: no parked key (consumer billing, key order-7)");
    assertThat(store.operator().deadLetters().audit(10)).extracting(DeadLetters.AuditEntry::action,
        DeadLetters.AuditEntry::target, DeadLetters.AuditEntry::dryRun).containsExactly(
        org.assertj.core.groups.Tuple.tuple("retry", "inbox", false), org.assertj.core.groups.Tuple.tuple("retry",
        "inbox", true));
  }

  @Test
  void executeNeverComesFromTheEnvironment() {
    Map<String, String> environment = new HashMap<>(Map.of("TXBOX_EXECUTE", "true"));
    assertThat(run(environment, "dead-letters", "discard")).isEqualTo(2);
    assertThat(out.toString()).contains("TXBOX_EXECUTE", "command line only");
  }

  private int run(String... args) {
    return run(Map.of(), args);
  }

  private int run(Map<String, String> environment, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", TestDatabase.jdbcUrl(), "--schema", schema.name()));
    String[] argv = all.toArray(String[]::new);
    CommandLine cli = TxboxCommand.commandLine(argv, environment);
    out = new StringWriter();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(out, true));
    return cli.execute(argv);
  }

  private Message event(String key, String type) {
    return Message.builder().id(UUID.randomUUID()).type(type).destination(topic).key(key)
        .payload(key.getBytes(StandardCharsets.UTF_8)).build();
  }

  private long count(String sql) throws Exception {
    try (Connection c = schema.db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql.replace("{schema}", schema.name()))) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
