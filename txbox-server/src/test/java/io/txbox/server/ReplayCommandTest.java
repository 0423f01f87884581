package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.jdbc.DeadLetters.AuditEntry;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.MemoryTransport;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TopicReader;
import io.txbox.testkit.TopicReader.Received;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code txbox replay} against real PostgreSQL and Kafka: a relay delivers events to the live
 * topic; an operator previews a replay, then replays a scope into a sandbox topic.
 */
class ReplayCommandTest {
  private final KafkaBroker kafka = KafkaBroker.shared();
  private final String live = "replay-live-" + UUID.randomUUID();
  private final String sandbox = "replay-sandbox-" + UUID.randomUUID();
  private final OutboxSchema schema = new OutboxSchema();
  private final PostgresOutboxStore store = schema.store;
  private final List<Message> delivered = List.of(event("k1", "OrderPlaced"), event("k2", "OrderPlaced"),
      event("k1", "OrderPaid"), event("k3", "OrderPlaced"), event("k1", "OrderShipped"), event("k2", "OrderPaid"));
  private StringWriter out;

  @BeforeEach
  void relayEventsToTheLiveTopicAndStop() throws Exception {
    kafka.createTopic(live, 2);
    kafka.createTopic(sandbox, 2);
    try (Relay relay = Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .idleInterval(Duration.ofMillis(20)).build().start()) {
      schema.send(delivered);
      await().atMost(Duration.ofSeconds(30)).until(() -> messagesIn(live) == delivered.size());
    }
  }

  @AfterEach
  void dropSchema() {
    schema.close();
  }

  @Test
  void aDryRunPreviewsTheScopeAndPublishesNothing() throws Exception {
    String subscriptionsBefore = subscriptions();

    assertThat(run("replay", "--subscription", "default", "--key", "k1", "--to-destination", sandbox)).isZero();

    assertThat(out.toString()).contains("3 event(s) in scope (subscription default, key k1, to destination "
        + sandbox + ")", "first: #1 " + delivered.get(0).id() + " OrderPlaced key=k1",
        "last:  #5 " + delivered.get(4).id() + " OrderShipped key=k1", "1 OrderPaid", "1 OrderPlaced", "1 OrderShipped",
        "dry run: nothing was published");
    assertThat(messagesIn(sandbox)).isZero();
    assertThat(messagesIn(live)).isEqualTo(delivered.size());
    assertThat(subscriptions()).isEqualTo(subscriptionsBefore);
    assertThat(store.operator().deadLetters().audit(10)).singleElement().satisfies(entry -> {
      assertThat(entry.action()).isEqualTo("replay");
      assertThat(entry.count()).isEqualTo(3);
      assertThat(entry.dryRun()).isTrue();
    });
  }

  @Test
  void aReplayToASandboxDeliversTheScopeThereInOrderAndNothingToTheLiveTopic() throws Exception {
    String subscriptionsBefore = subscriptions();

    assertThat(run("replay", "--subscription", "default", "--key", "k1", "--to-destination", sandbox,
        "--kafka-bootstrap-servers", kafka.bootstrapServers(), "--events-per-second", "2", "--execute")).isZero();

    assertThat(out.toString()).contains("replayed 3 event(s)", "100% 3/3");
    try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), sandbox)) {
      List<Received> got = reader.readUntil(r -> r.size() >= 3, Duration.ofSeconds(30));
      assertThat(got).extracting(Received::id).containsExactly(
          delivered.get(0).id().toString(), delivered.get(2).id().toString(), delivered.get(4).id().toString());
    }
    assertThat(messagesIn(sandbox)).as("exactly the scope").isEqualTo(3);
    assertThat(messagesIn(live)).as("nothing to the live topic").isEqualTo(delivered.size());
    assertThat(subscriptions()).as("live subscriptions untouched").isEqualTo(subscriptionsBefore);
    assertThat(store.operator().deadLetters().audit(10)).extracting(AuditEntry::action, AuditEntry::count, AuditEntry::dryRun)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("replay", 3L, false));
  }

  @Test
  void aBrokerFoundOnTheClassPathTakesTheReplayWithItsOwnSettings() {
    String space = "replay-" + UUID.randomUUID(); // MemoryTransport, registered by this module's tests only

    assertThat(run("replay", "--key", "k1", "--broker", "memory", "--memory-space", space,
        "--memory-max-message-size", "1000", "--execute")).isZero();

    assertThat(out.toString()).contains("replayed 3 event(s)", "to memory " + space);
    assertThat(MemoryTransport.published(space)).extracting(Message::id)
        .containsExactly(delivered.get(0).id(), delivered.get(2).id(), delivered.get(4).id());
  }

  @Test
  void eventsTheBrokerRefusesAreNamedAndTheReplayFailsWithoutStoppingTheRest() {
    String missing = "replay-missing-" + UUID.randomUUID();

    assertThat(run("replay", "--key", "k2", "--to-destination", missing, "--kafka-bootstrap-servers",
        kafka.bootstrapServers(), "--max-attempts", "2", "--execute")).isEqualTo(1);

    assertThat(out.toString()).contains("2 event(s) in scope", "replayed 0 event(s)",
        "2 event(s) were refused by the broker for good and skipped:", "event " + delivered.get(1).id() + " to "
        + missing, "event " + delivered.get(5).id() + " to " + missing, "does not exist");
  }

  @Test
  void aSubscriptionsScopeIsWhatItHasDeliveredNotWhatWaits() throws Exception {
    schema.send(List.of(event("k1", "OrderCancelled"), event("k4", "OrderPlaced")));

    assertThat(run("replay", "--subscription", "default")).isZero();
    assertThat(out.toString()).contains(delivered.size() + " event(s) in scope");
    assertThat(run("replay")).isZero();
    assertThat(out.toString()).contains((delivered.size() + 2) + " event(s) in scope (all)",
        "1 OrderCancelled");
  }

  @Test
  void aSubscriptionThatNeverRanAndABadRateAreNamedErrors() {
    assertThat(run("replay", "--subscription", "defualt")).isEqualTo(2);
    assertThat(out.toString()).contains("invalid subscription 'defualt'", "known subscriptions: default");

    assertThat(run("replay", "--events-per-second", "0")).isEqualTo(2);
    assertThat(out.toString()).contains("--events-per-second (TXBOX_EVENTS_PER_SECOND)", "between 1 and 100000");

    assertThat(run("replay", "--since", "yesterday")).isEqualTo(2);
    assertThat(out.toString()).contains("'yesterday' is not an instant");
  }

  private int run(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", TestDatabase.jdbcUrl(), "--schema", schema.name()));
    String[] argv = all.toArray(String[]::new);
    CommandLine cli = TxboxCommand.commandLine(argv, Map.of());
    out = new StringWriter();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(out, true));
    return cli.execute(argv);
  }

  private Message event(String key, String type) {
    return Message.builder().id(UUID.randomUUID()).type(type).destination(live).key(key)
        .payload(key.getBytes(StandardCharsets.UTF_8)).build();
  }

  /** Records in the topic, from the broker's end offsets. */
  private long messagesIn(String topic) throws Exception {
    Map<TopicPartition, OffsetSpec> latest = Map.of(new TopicPartition(topic, 0), OffsetSpec.latest(),
        new TopicPartition(topic, 1), OffsetSpec.latest());
    try (Admin admin = kafka.admin()) {
      return admin.listOffsets(latest).all().get().values().stream().mapToLong(o -> o.offset()).sum();
    }
  }

  /** Every subscription row, checkpoint and lease, as text. */
  private String subscriptions() throws Exception {
    try (Connection c = schema.db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT bucket, tx_id, position, owner, attempts FROM " + schema.name()
            + ".txbox_subscription ORDER BY subscription, bucket")) {
      List<String> rows = new ArrayList<>();
      while (rs.next()) {
        rows.add(rs.getString(1) + ":" + rs.getString(2) + ":" + rs.getString(3) + ":" + rs.getString(4) + ":"
            + rs.getString(5));
      }
      return rows.stream().collect(Collectors.joining("\n"));
    }
  }
}
