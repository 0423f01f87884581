package io.txbox.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Delivery;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.kafka.KafkaExactlyOncePublisher;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Publisher;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.PostgresNode;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A PostgreSQL primary with a synchronous standby, stopped hard mid-load and the standby promoted,
 * the relays and writers reaching them through a two-host URL: the logical relay on PostgreSQL 15
 * (no failover slots: the promoted standby has no slot) and 17 (a failover slot kept in step on
 * the standby), and the table relay on 15.
 */
@FaultDrill
class LogicalRelayFailoverTest {
  private static final int WRITERS = 4;
  private static final int PER_WRITER = 600;
  /** The goal: events flow again within this of the promotion, with default settings. */
  private static final Duration FLOWING_AGAIN = Duration.ofSeconds(30);

  private final KafkaBroker kafka = KafkaBroker.shared();

  @Test
  void onPostgres15TheLogicalRelayRecreatesTheSlotAndRelaysWhatItMissedFromTheTableNothingLostKeysInOrder()
      throws Exception {
    try (FailoverCluster cluster = FailoverCluster.start(PostgresNode.debianBinaries(15), false)) {
      Run run = logicalRun(cluster, false);
      assertThat(run.missing).as("events committed and not delivered").isEmpty();
      assertThat(run.outOfOrder).as("keys whose events arrived out of order").isEmpty();
      assertThat(run.gap).as("rows exist in the table: nothing is lost, no gap").isEmpty();
      assertThat(run.flowingAgain).isLessThan(FLOWING_AGAIN);
    }
  }

  /**
   * Drill 5 of exactly-once delivery for the logical relay on PostgreSQL 15, in rows mode: the
   * promoted standby has no slot, so the relay makes it again and first relays from the table what
   * its checkpoint does not cover, passing the transactions Kafka's note says the former primary's
   * stream delivered; the new stream passes what the catch-up sent.
   */
  @Test
  void onPostgres15TheCatchUpFromTheTableSendsNothingTheFormerStreamDeliveredNothingLostNothingTwice()
      throws Exception {
    try (FailoverCluster cluster = FailoverCluster.start(PostgresNode.debianBinaries(15), false)) {
      Run run = logicalRun(cluster, false, Delivery.EXACTLY_ONCE);
      assertThat(run.missing).as("events committed and not delivered").isEmpty();
      assertThat(run.twice).as("records read twice by a read_committed consumer").isZero();
      assertThat(run.outOfOrder).isEmpty();
      assertThat(run.flowingAgain).isLessThan(FLOWING_AGAIN);
    }
  }

  /**
   * The hole drill 5 once fell into, made to happen: on 15 the former primary's stream delivers a
   * transaction whose commit never reached the synchronous standby (decoding there does not wait
   * for it, only the writer does), so the promoted standby never had it and gives its transaction
   * id to a new one. The broker's note names that id as delivered; the catch-up must still relay
   * the new transaction's event.
   */
  @Test
  void onPostgres15ATransactionIdThePromotedStandbyGivesAgainIsRelayedNotPassedAsDeliveredBefore() throws Exception {
    try (FailoverCluster cluster = FailoverCluster.start(PostgresNode.debianBinaries(15), false)) {
      String topic = topic();
      String prefix = "failover-" + UUID.randomUUID() + "-"; // both relays: the second reads the first's note
      PostgresOutboxStore store = PostgresOutboxStore.builder(cluster.pool).build();
      LogicalReplication replication = LogicalReplication.builder(cluster.pool, store).build();
      replication.migrate();
      Outbox outbox = Outbox.create(store.writer());
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
        AtomicLong lostXid = new AtomicLong();
        String lost;
        try (LogicalRelay relay = relay(cluster, replication, Delivery.EXACTLY_ONCE, topic, prefix).build().start()) {
          await().atMost(Duration.ofSeconds(30)).until(relay::isStreaming);
          String kept = commitOne(cluster.primary.jdbcUrl("postgres"), outbox, topic, new AtomicLong());
          reader.readUntil(r -> TopicReader.distinctIds(r).contains(kept), Duration.ofSeconds(30));
          cluster.standby.stop(); // from now on the primary's commits wait for it, and the writer with them
          Message m = event(topic);
          lost = m.id().toString();
          CompletableFuture.runAsync(() -> {
            try {
              commitOne(cluster.primary.jdbcUrl("postgres"), outbox, m, lostXid);
            } catch (Exception e) {
              // the primary is stopped under the waiting commit: it never returns
            }
          });
          List<TopicReader.Received> got = reader.readUntil(r -> TopicReader.distinctIds(r).contains(lost),
              Duration.ofSeconds(30));
          assertThat(TopicReader.distinctIds(got)).as("the stream delivers a commit the standby lacks").contains(lost);
          cluster.primary.stopImmediately();
        }
        cluster.standby.start();
        cluster.standby.promote();
        String reused = commitWithTransactionId(cluster, outbox, topic, lostXid.get());
        try (LogicalRelay relay = relay(cluster, replication, Delivery.EXACTLY_ONCE, topic, prefix).build().start()) {
          List<TopicReader.Received> got = reader.readUntil(r -> TopicReader.distinctIds(r).contains(reused),
              Duration.ofSeconds(60));
          assertThat(TopicReader.distinctIds(got)).as("the new transaction with id " + lostXid.get()).contains(reused);
          assertThat(got.size()).as("records read twice").isEqualTo(TopicReader.distinctIds(got).size());
        }
      }
    }
  }

  @Test
  void onPostgres15EventsWrittenAsWalMessagesAcrossAFailoverAreRecordedAsAGapAndTheStatusSaysSo() throws Exception {
    try (FailoverCluster cluster = FailoverCluster.start(PostgresNode.debianBinaries(15), false)) {
      Run run = logicalRun(cluster, true);
      assertThat(run.gap).as("the range whose WAL messages no slot could read").isPresent();
      SlotGap gap = run.gap.get();
      // Each event lost, by the writers' own record of when its commit returned, inside the range
      // named: sending that range again leaves nothing lost.
      assertThat(run.missing).as("events lost, each inside the range " + gap.describe())
          .allSatisfy(id -> assertThat(cluster.committedAt.get(id)).isAfterOrEqualTo(gap.from())
              .isBefore(gap.to()));
      assertThat(run.outOfOrder).isEmpty();
      assertThat(run.flowingAgain).isLessThan(FLOWING_AGAIN);
      assertThat(run.slotProblems).anyMatch(p -> p.contains("were not relayed") && p.contains("acknowledge-gap"));
    }
  }

  /**
   * The promoted node still names a standby that is gone in {@code synchronous_standby_names}
   * (the dead primary's own name, say): every commit hangs, and the slot the relay makes again
   * waits behind those commits. The relay, readiness and {@code txbox status} must say so, and all
   * flows once the setting is mended.
   */
  @Test
  void onPostgres15APromotedNodeWhoseSynchronousStandbyIsGoneIsAWaitTheRelayAndTheReportName() throws Exception {
    try (FailoverCluster cluster = FailoverCluster.start(PostgresNode.debianBinaries(15), false,
        Map.of("synchronous_standby_names", "gone_standby"))) {
      String topic = topic();
      PostgresOutboxStore store = PostgresOutboxStore.builder(cluster.pool).build();
      LogicalReplication replication = LogicalReplication.builder(cluster.pool, store).build();
      replication.migrate();
      Outbox outbox = Outbox.create(store.writer());
      try (LogicalRelay relay = relay(cluster, replication, Delivery.AT_LEAST_ONCE, topic).checkpointInterval(Duration.ofMillis(200))
              .waitWarning(Duration.ofSeconds(1)).build().start();
          TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
        await().atMost(Duration.ofSeconds(30)).until(relay::isStreaming);
        cluster.write(outbox, topic, 1, 20, Duration.ofMillis(10)).get(30, TimeUnit.SECONDS);
        reader.readUntil(r -> r.size() >= 20, Duration.ofSeconds(30));
        Instant delivered = Instant.now();
        await().atMost(Duration.ofSeconds(30)).until(() -> checkpointTakenAfter(cluster, delivered)); // covers them

        cluster.failOver();
        CompletableFuture<Void> hanging = cluster.write(outbox, topic, 1, 1, Duration.ZERO); // hangs in its commit
        // The stream from the former primary may see a commit of its own wait first, as the standby
        // it waits for is promoted; the wait that matters comes on the promoted node, not streamed.
        await().atMost(Duration.ofSeconds(60)).until(() -> !relay.isStreaming() && relay.stalled().isPresent());
        assertThat(relay.stalled().orElseThrow().what()).contains("synchronous_standby_names");
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(
            SlotReport.read(cluster.pool, store).problems()).anySatisfy(p -> assertThat(p)
            .contains("wait for a synchronous standby").contains("'gone_standby'")));
        assertThat(SlotReport.read(cluster.pool, store).slots()).allSatisfy(s -> assertThat(s.state())
            .doesNotStartWith("streamed"));
        assertThat(hanging).isNotDone();

        cluster.standby.set(Map.of("synchronous_standby_names", "''")); // the operator mends it
        hanging.get(60, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(60)).until(relay::isStreaming);
        await().atMost(Duration.ofSeconds(30)).until(() -> relay.stalled().isEmpty());
        Set<String> kept = keptByTheDatabase(cluster, topic);
        List<TopicReader.Received> got = reader.readUntil(r -> TopicReader.distinctIds(r).containsAll(kept),
            Duration.ofSeconds(60));
        assertThat(TopicReader.distinctIds(got)).containsAll(kept);
        assertThat(SlotReport.read(cluster.pool, store).problems()).isEmpty();
      }
    }
  }

  @Test
  void onPostgres17AFailoverSlotKeptOnTheStandbyCarriesEvenWalMessagesOverNothingLost() throws Exception {
    try (FailoverCluster cluster = FailoverCluster.start(FailoverCluster.embeddedBinaries(), true)) {
      // As a slot in production has long been: the standby copies it once the relay moved it on.
      cluster.beforeLoad = cluster::awaitSlotSyncedOnStandby;
      Run run = logicalRun(cluster, true);
      assertThat(run.missing).as("events committed and not delivered").isEmpty();
      assertThat(run.outOfOrder).isEmpty();
      assertThat(run.gap).as("the slot came over with the failover").isEmpty();
      assertThat(run.flowingAgain).isLessThan(FLOWING_AGAIN);
    }
  }

  /**
   * Drill 5 of exactly-once delivery for the logical relay, in rows mode: the failover slot comes
   * over on the synchronous standby, somewhat behind the former primary's; what the new primary's
   * slot reads again is passed by the place Kafka holds.
   */
  @Test
  void onPostgres17AFailoverSlotCarriesExactlyOnceDeliveryOverNothingLostNothingTwice() throws Exception {
    try (FailoverCluster cluster = FailoverCluster.start(FailoverCluster.embeddedBinaries(), true)) {
      cluster.beforeLoad = cluster::awaitSlotSyncedOnStandby;
      Run run = logicalRun(cluster, false, Delivery.EXACTLY_ONCE);
      assertThat(run.missing).as("events committed and not delivered").isEmpty();
      assertThat(run.twice).as("records read twice by a read_committed consumer").isZero();
      assertThat(run.outOfOrder).isEmpty();
      assertThat(run.flowingAgain).isLessThan(FLOWING_AGAIN);
    }
  }

  @Test
  void onPostgres17TheStatusSaysWhenNoStandbyKeepsTheSlotInStep() {
    try (FailoverCluster cluster = FailoverCluster.start(FailoverCluster.embeddedBinaries(), true)) {
      PostgresOutboxStore store = PostgresOutboxStore.builder(cluster.pool).build();
      LogicalReplication.builder(cluster.pool, store).build().migrate(); // a failover slot on 17
      assertThat(SlotReport.read(cluster.pool, store).problems()).as("a failover slot, a standby in step").isEmpty();

      cluster.primary.execute("SELECT pg_create_logical_replication_slot('plain', 'pgoutput')");
      LogicalReplication plain = LogicalReplication.builder(cluster.pool, store).slot("plain").build();
      plain.migrate(); // the slot exists already: made without failover, as on a server before 17
      assertThat(SlotReport.read(cluster.pool, store).problems())
          .anyMatch(p -> p.startsWith("slot plain is not a failover slot"));

      cluster.primary.execute("SELECT pg_drop_replication_slot('plain')");
      cluster.standby.stop(); // named in synchronized_standby_slots: logical decoding now waits for it
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(
          SlotReport.read(cluster.pool, store).problems()).singleElement().asString()
          .startsWith("standby slot standby1 (synchronized_standby_slots) is not streamed"));
      cluster.standby.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> SlotReport.read(cluster.pool, store).problems().isEmpty());
    }
  }

  @Test
  void onPostgres15TheTableRelayGoesOnFromThePromotedStandbyNothingLostKeysInOrder() throws Exception {
    try (FailoverCluster cluster = FailoverCluster.start(PostgresNode.debianBinaries(15), false)) {
      String topic = topic();
      PostgresOutboxStore store = PostgresOutboxStore.builder(cluster.pool).build();
      store.migrate();
      try (Relay relay = Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
              .build().start();
          TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
        Run run = drill(cluster, reader, Outbox.create(store.writer()), topic);
        assertThat(run.missing).as("events committed and not delivered").isEmpty();
        assertThat(run.outOfOrder).isEmpty();
        assertThat(run.flowingAgain).isLessThan(FLOWING_AGAIN);
      }
    }
  }

  private static Message event(String topic) {
    return Message.builder().type("Test").destination(topic).key("k").payload("0:0".getBytes(StandardCharsets.UTF_8))
        .build();
  }

  /** Commits one event at {@code url}, its transaction's id put in {@code xid} before the commit. */
  private static String commitOne(String url, Outbox outbox, String topic, AtomicLong xid) throws Exception {
    Message m = event(topic);
    commitOne(url, outbox, m, xid);
    return m.id().toString();
  }

  private static void commitOne(String url, Outbox outbox, Message m, AtomicLong xid) throws Exception {
    try (Connection c = java.sql.DriverManager.getConnection(url)) {
      c.setAutoCommit(false);
      outbox.send(c, m);
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_current_xact_id()::text")) {
        rs.next();
        xid.set(Long.parseLong(rs.getString(1)));
      }
      c.commit();
    }
  }

  /**
   * On the promoted standby, uses up transaction ids until the next is {@code xid}, and commits one
   * event in the transaction that gets it.
   */
  private static String commitWithTransactionId(FailoverCluster cluster, Outbox outbox, String topic, long xid)
      throws Exception {
    String url = cluster.standby.jdbcUrl("postgres");
    try (Connection c = java.sql.DriverManager.getConnection(url); Statement s = c.createStatement()) {
      for (int i = 0; i < 1000 && nextTransactionId(s) < xid; i++) {
        s.execute("SELECT pg_current_xact_id()"); // uses up one id
      }
    }
    AtomicLong got = new AtomicLong();
    String id = commitOne(url, outbox, topic, got);
    assertThat(got.get()).as("the promoted standby gives the lost transaction's id again").isEqualTo(xid);
    return id;
  }

  private static long nextTransactionId(Statement s) throws Exception {
    try (ResultSet rs = s.executeQuery("SELECT pg_snapshot_xmax(pg_current_snapshot())::text")) {
      rs.next();
      return Long.parseLong(rs.getString(1));
    }
  }

  /** What a drill found. */
  private record Run(Set<String> missing, List<String> outOfOrder, Duration flowingAgain,
      java.util.Optional<SlotGap> gap, List<String> slotProblems, int twice) {}

  /** Whether the slot's checkpoint was taken after {@code instant}. */
  private static boolean checkpointTakenAfter(FailoverCluster cluster, Instant instant) throws Exception {
    try (Connection c = cluster.pool.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT marked_at FROM txbox_slot_checkpoint WHERE slot = 'txbox'")) {
      return rs.next() && rs.getTimestamp(1).toInstant().isAfter(instant);
    }
  }

  /** A logical relay of {@code replication}'s slot to Kafka, through the cluster's two-host URL. */
  private LogicalRelay.Builder relay(FailoverCluster cluster, LogicalReplication replication, Delivery delivery,
      String topic) {
    return relay(cluster, replication, delivery, topic, "failover-" + UUID.randomUUID() + "-");
  }

  private LogicalRelay.Builder relay(FailoverCluster cluster, LogicalReplication replication, Delivery delivery,
      String topic, String transactionalIdPrefix) {
    Properties credentials = new Properties();
    credentials.setProperty("user", "postgres");
    Publisher publisher = delivery == Delivery.EXACTLY_ONCE
        ? KafkaExactlyOncePublisher.builder().bootstrapServers(kafka.bootstrapServers())
            .transactionalIdPrefix(transactionalIdPrefix).build()
        : KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build();
    return LogicalRelay.builder(replication, publisher).delivery(delivery).connection(cluster.url, credentials);
  }

  private Run logicalRun(FailoverCluster cluster, boolean walMessages) throws Exception {
    return logicalRun(cluster, walMessages, Delivery.AT_LEAST_ONCE);
  }

  private Run logicalRun(FailoverCluster cluster, boolean walMessages, Delivery delivery) throws Exception {
    String topic = topic();
    PostgresOutboxStore store = PostgresOutboxStore.builder(cluster.pool).build();
    LogicalReplication replication = LogicalReplication.builder(cluster.pool, store).build();
    replication.migrate();
    try (LogicalRelay relay = relay(cluster, replication, delivery, topic).build().start();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      await().atMost(Duration.ofSeconds(30)).until(relay::isStreaming);
      Outbox outbox = walMessages ? Outbox.create(WalOutboxStore.create()) : Outbox.create(store.writer());
      cluster.write(outbox, topic(), 1, 20, Duration.ofMillis(10)).get(30, TimeUnit.SECONDS); // a topic apart
      cluster.beforeLoad.run();
      cluster.forgetCommitted();
      Run run = drill(cluster, reader, outbox, topic);
      return new Run(run.missing, run.outOfOrder, run.flowingAgain, replication.gap(),
          SlotReport.read(cluster.pool, store).problems(), run.twice);
    }
  }

  /**
   * Writers commit through the two-host URL; a quarter of the way in, the primary is stopped hard
   * and the standby promoted; then every event the database kept must arrive, each key in order.
   */
  private Run drill(FailoverCluster cluster, TopicReader reader, Outbox outbox, String topic) throws Exception {
    CompletableFuture<Void> writers = cluster.write(outbox, topic, WRITERS, PER_WRITER, Duration.ofMillis(5));
    reader.readUntil(r -> r.size() >= WRITERS * PER_WRITER / 4, Duration.ofSeconds(60));
    cluster.failOver();
    Instant promoted = cluster.promotedAt();
    List<TopicReader.Received> got = reader.readUntil(
        r -> r.stream().anyMatch(x -> cluster.committedAfterPromotion().contains(x.id())), Duration.ofSeconds(60));
    Duration flowingAgain = Duration.between(promoted, Instant.now());
    System.out.printf("%s: events flowing again %d ms after the promotion%n", topic, flowingAgain.toMillis());
    writers.get(180, TimeUnit.SECONDS);

    Set<String> kept = keptByTheDatabase(cluster, topic);
    // Once everything kept has arrived, or for as long as a lost slot's gap takes to show
    got = reader.readUntil(r -> TopicReader.distinctIds(r).containsAll(kept), Duration.ofSeconds(30));
    got = reader.readUntil(r -> false, Duration.ofSeconds(2)); // and any late copy
    Set<String> missing = new HashSet<>(kept);
    missing.removeAll(TopicReader.distinctIds(got));
    int twice = got.size() - TopicReader.distinctIds(got).size();
    System.out.printf("%s: %d records of %d events, %d read twice%n", topic, got.size(),
        TopicReader.distinctIds(got).size(), twice);
    return new Run(missing, outOfOrder(got), flowingAgain, java.util.Optional.empty(), List.of(), twice);
  }

  /**
   * The events the database promised: those whose commit returned, and, written as outbox rows,
   * every row the new primary holds (a commit cut off by the crash may be there or not).
   */
  private static Set<String> keptByTheDatabase(FailoverCluster cluster, String topic) throws Exception {
    Set<String> kept = new HashSet<>(cluster.committed);
    try (Connection c = cluster.pool.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT id::text FROM txbox_outbox WHERE destination = '" + topic + "'")) {
      while (rs.next()) {
        kept.add(rs.getString(1));
      }
    }
    return kept;
  }

  /** Keys whose events, in order of first delivery, do not follow the order their writer committed them in. */
  private static List<String> outOfOrder(List<TopicReader.Received> got) {
    Map<String, Integer> last = new LinkedHashMap<>();
    List<String> wrong = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    got.stream()
        .sorted((a, b) -> a.partition() != b.partition()
            ? Integer.compare(a.partition(), b.partition()) : Long.compare(a.offset(), b.offset()))
        .filter(r -> seen.add(r.id()))
        .forEach(r -> {
          int sequence = Integer.parseInt(new String(r.value(), StandardCharsets.UTF_8).split(":")[1]);
          Integer before = last.put(r.key(), sequence);
          if (before != null && before > sequence) {
            wrong.add(r.key() + ": " + sequence + " after " + before);
          }
        });
    return wrong;
  }

  private String topic() {
    String topic = "failover-" + StackWalker.getInstance().walk(s -> s.map(StackWalker.StackFrame::getMethodName)
        .filter(m -> m.startsWith("on")).findFirst().orElse("warm-up")) + "-" + UUID.randomUUID();
    kafka.createTopic(topic, 4);
    return topic;
  }
}
