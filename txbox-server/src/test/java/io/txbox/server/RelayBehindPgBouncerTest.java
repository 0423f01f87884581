package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.JdkNeutral;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.PgBouncer;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TopicReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code txbox relay} and the operators' commands behind Debian's PgBouncer 1.18, the way a
 * service reaches a managed PostgreSQL: writers, relays and commands all connect through the
 * pooler, with the URL an operator would write (no {@code prepareThreshold}: txbox sees the
 * pooler and uses no named statements), and the relays listen on a direct connection of their own.
 */
@JdkNeutral
class RelayBehindPgBouncerTest {
  private static final int EVENTS = 4000;
  private static final int KEYS = 50;
  private final KafkaBroker kafka = KafkaBroker.shared();
  private PgBouncer pooler;
  private TestDatabase db;
  private PostgresOutboxStore store;
  private String topic;
  @TempDir Path dir;

  @BeforeEach
  void setUp() {
    topic = "pgbouncer-" + UUID.randomUUID();
    kafka.createTopic(topic, 8);
  }

  @AfterEach
  void tearDown() {
    if (db != null) {
      db.close();
    }
    if (pooler != null) {
      pooler.close();
    }
  }

  private void behind(PgBouncer.Mode mode) {
    pooler = TestDatabase.pooler(mode, 8);
    db = TestDatabase.create(TestDatabase.throughPooler(pooler)); // the writers' pool, as pgjdbc advises
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build();
  }

  /** The pooler's URL as an operator writes it: without prepareThreshold. */
  private String poolerUrl() {
    return TestDatabase.throughPooler(pooler).replace("&prepareThreshold=0", "");
  }

  private List<String> relayArgs(int index, String... more) {
    List<String> args = new ArrayList<>(List.of("--jdbc-url", poolerUrl(), "--schema", db.schema(),
        "--kafka-bootstrap-servers", kafka.bootstrapServers(), "--instance-id", "relay-" + index,
        "--batch-size", "200", "--heartbeat-interval", "250ms", "--lease-duration", "2s"));
    args.addAll(List.of(more));
    return args;
  }

  @FaultDrill
  @Test
  void behindTransactionPoolingTwoRelaysOneKilledDeliverEverythingInOrderWithoutErrors() throws Exception {
    behind(PgBouncer.Mode.TRANSACTION);
    assertThat(run("migrate", "--jdbc-url", poolerUrl(), "--schema", db.schema())).as(err.toString()).isZero();
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      List<Process> processes = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        processes.add(relays.start(dir, relayArgs(i, "--listen-jdbc-url", TestDatabase.jdbcUrl())));
      }
      await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
          assertThat(owners()).as(relays.logTails(30)).isEqualTo(2));
      CompletableFuture<Void> writers = CompletableFuture.allOf(
          CompletableFuture.runAsync(() -> write(0, EVENTS / 2)),
          CompletableFuture.runAsync(() -> write(EVENTS / 2, EVENTS / 2)));
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= EVENTS / 4, Duration.ofSeconds(60));
      processes.get(0).destroyForcibly(); // SIGKILL mid-load: its buckets move when the lease ends
      writers.get(120, TimeUnit.SECONDS);

      List<TopicReader.Received> got =
          reader.readUntil(r -> TopicReader.distinctIds(r).size() >= EVENTS, Duration.ofSeconds(120));
      assertThat(TopicReader.distinctIds(got)).as(relays.logTails(30)).hasSize(EVENTS);
      assertThat(TopicReader.firstDeliveriesByKey(got)).isEqualTo(expectedByKey());
      String survivor = relays.log(1);
      assertThat(survivor).as("it saw the pooler and chose for it")
          .contains("go through a pooler that lends server connections per transaction");
      assertThat(survivor).as("no error loop, no named statement on a pooled connection")
          .doesNotContain("prepared statement \"", "ERROR", "failed");
      assertThat(survivor).as("woken through its own LISTEN connection").doesNotContain("hears nothing");
    }
    assertThat(run("status", "--jdbc-url", poolerUrl(), "--schema", db.schema())).as(out.toString() + err)
        .isIn(0, 1); // the killed relay may still hold buckets until its lease ends
    assertThat(out.toString()).contains("database connections: lent per transaction by a pooler");
  }

  @Test
  void behindSessionPoolingARelayListensThroughThePoolerAndTheCommandsWork() throws Exception {
    behind(PgBouncer.Mode.SESSION);
    assertThat(run("migrate", "--jdbc-url", poolerUrl(), "--schema", db.schema())).as(err.toString()).isZero();
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      relays.start(dir, relayArgs(0, "--idle-interval", "1m"));
      await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
          assertThat(owners()).as(relays.logTails(30)).isEqualTo(1));
      write(0, 200);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 200, Duration.ofSeconds(30));
      assertThat(relays.log(0)).doesNotContain("hears nothing", "pooler that lends", "prepared statement \"", "ERROR");
    }
    assertThat(run("status", "--jdbc-url", poolerUrl(), "--schema", db.schema())).as(out.toString() + err).isIn(0, 1);
    assertThat(out.toString()).doesNotContain("lent per transaction").contains("subscription default");
    assertThat(run("dead-letters", "list", "--jdbc-url", poolerUrl(), "--schema", db.schema())).as(err.toString())
        .isZero();
  }

  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  private int run(String... args) {
    CommandLine cli = TxboxCommand.commandLine(args, Map.of());
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    return cli.execute(args);
  }

  /** Events {@code first} to {@code first + count - 1}, one or two a transaction, over {@value #KEYS} keys. */
  private void write(int first, int count) {
    Outbox outbox = Outbox.create(store.writer());
    try {
      for (int i = first; i < first + count; ) {
        try (Connection c = db.dataSource().getConnection()) {
          c.setAutoCommit(false);
          int inTx = 1 + i % 2;
          for (int j = 0; j < inTx && i < first + count; j++, i++) {
            outbox.send(c, Message.builder().type("Test").destination(topic).key("key-" + (i % KEYS))
                .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).build());
          }
          c.commit();
        }
      }
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private int owners() throws Exception {
    return OutboxRows.owners(db.dataSource(), db.schema());
  }

  private Map<String, List<String>> expectedByKey() throws Exception {
    return OutboxRows.byKey(db.dataSource(), store.operator().outboxTable());
  }

}
