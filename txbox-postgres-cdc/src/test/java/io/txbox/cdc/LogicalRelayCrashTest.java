package io.txbox.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.testkit.ChildProcess;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Relays in processes of their own, SIGKILLed mid-stream while a standby waits. */
@FaultDrill
class LogicalRelayCrashTest {
  static final int EVENTS = 3000;
  static final int KILLS = 3;

  @ParameterizedTest
  @EnumSource(LogicalRelayTest.WriteMode.class)
  void killedRelaysLoseNothingAndKeepEachKeysOrderAsStandbysTakeOver(LogicalRelayTest.WriteMode mode) throws Exception {
    KafkaBroker kafka = KafkaBroker.shared();
    String topic = "cdc-crash-" + UUID.randomUUID();
    kafka.createTopic(topic, 4);
    Path dir = Files.createTempDirectory("txbox-cdc-crash");
    List<Process> relays = new ArrayList<>();
    try (LogicalDatabase db = LogicalDatabase.fresh()) {
      try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      Outbox outbox = mode.outbox(db);
      Map<String, List<String>> expected = new LinkedHashMap<>();
      ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
      killWhileWriting(db, reader, relays, n -> startRelay(db, kafka, dir, n),
          () -> writeSpread(scheduler, db, outbox, topic, expected), mode.toString())
          .get(120, TimeUnit.SECONDS);
      scheduler.shutdown();
      List<TopicReader.Received> got =
          reader.readUntil(r -> TopicReader.distinctIds(r).size() >= EVENTS, Duration.ofSeconds(120));
      assertThat(TopicReader.distinctIds(got)).as("every event, once at least").hasSize(EVENTS);
      assertThat(TopicReader.firstDeliveriesByKey(got)).isEqualTo(expected);
      System.out.printf("%s: %d records for %d events after %d kills%n", mode, got.size(), EVENTS, KILLS);
      } finally {
        relays.forEach(Process::destroyForcibly);
        for (Process p : relays) {
          p.waitFor(10, TimeUnit.SECONDS);
        }
        // the slot is free once its server process noticed the last relay is gone
        await().atMost(Duration.ofSeconds(20)).until(() -> activePidOrZero(db) == 0);
      }
    }
  }

  @Test
  void aKilledRelaySendsAgainAtMostTheBatchItHadWithTheBroker() throws Exception {
    KafkaBroker kafka = KafkaBroker.shared();
    String topic = "cdc-resend-" + UUID.randomUUID();
    kafka.createTopic(topic, 4);
    Path dir = Files.createTempDirectory("txbox-cdc-resend");
    int events = 20_000;
    int batch = 200;
    try (LogicalDatabase db = LogicalDatabase.fresh();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      // One event per transaction, so that each settled batch ends transactions the slot may confirm.
      db.exec("DO $$ BEGIN PERFORM set_config('synchronous_commit', 'off', false); FOR i IN 1.." + events
          + " LOOP INSERT INTO " + db.store.operator().outboxTable()
          + " (id, key, type, destination, payload, content_type, headers, created_at)"
          + " VALUES (gen_random_uuid(), 'k' || i % 17, 'Test', '" + topic + "', convert_to(i::text, 'UTF8'),"
          + " 'text/plain', '{}'::jsonb, now()); COMMIT; END LOOP; END $$");
      Process first = startRelay(db, kafka, dir, "first", batch);
      Process second = null;
      try {
        reader.readUntil(r -> r.size() >= events / 2, Duration.ofSeconds(60));
        first.destroyForcibly().waitFor(10, TimeUnit.SECONDS); // SIGKILL, mid-drain
        second = startRelay(db, kafka, dir, "second", batch);
        reader.readUntil(r -> TopicReader.distinctIds(r).size() >= events, Duration.ofSeconds(120));
        List<TopicReader.Received> got = reader.readUntil(r -> false, Duration.ofSeconds(2)); // and any late copy
        int resent = got.size() - events;
        System.out.printf("killed at half of %d events: %d sent again (batch %d)%n", events, resent, batch);
        assertThat(TopicReader.distinctIds(got)).hasSize(events);
        assertThat(resent).as("records sent twice").isBetween(0, batch);
      } finally {
        first.destroyForcibly();
        if (second != null) {
          second.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> activePidOrZero(db) == 0);
      }
    }
  }

  /** Starts relay number {@code n} in a process of its own. */
  interface RelayStarter {
    Process start(int n) throws Exception;
  }

  /**
   * Starts a streaming relay and a standby, then the writer, and SIGKILLs the streaming relay
   * {@value #KILLS} times as the events arrive, starting a new standby after each; returns the
   * writer's future. The relays started are added to {@code relays}, for the caller to stop.
   */
  static CompletableFuture<Void> killWhileWriting(LogicalDatabase db, TopicReader reader, List<Process> relays,
      RelayStarter starter, java.util.concurrent.Callable<CompletableFuture<Void>> writer, String what)
      throws Exception {
    relays.add(starter.start(0));
    int active = activePid(db);
    relays.add(starter.start(1));
    CompletableFuture<Void> written = writer.call();
    for (int kill = 0; kill < KILLS; kill++) {
      int seen = (kill + 1) * EVENTS / (KILLS + 2);
      reader.readUntil(r -> r.size() >= seen, Duration.ofSeconds(60));
      relays.get(kill).destroyForcibly().waitFor(10, TimeUnit.SECONDS); // SIGKILL, mid-stream
      long killedAt = System.nanoTime();
      int previous = active;
      await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(10))
          .until(() -> activePidOrZero(db) != 0 && activePidOrZero(db) != previous);
      active = activePid(db);
      System.out.printf("%s: standby streaming %d ms after the active relay was killed%n",
          what, (System.nanoTime() - killedAt) / 1_000_000);
      relays.add(starter.start(kill + 2));
    }
    return written;
  }

  /**
   * Commits the events one per transaction, 50 every 20 ms on a scheduler, so that the writes
   * spread over the kills; the future completes after the last one.
   */
  static CompletableFuture<Void> writeSpread(ScheduledExecutorService scheduler, LogicalDatabase db,
      Outbox outbox, String topic, Map<String, List<String>> expected) {
    CompletableFuture<Void> written = new CompletableFuture<>();
    AtomicInteger next = new AtomicInteger();
    scheduler.scheduleWithFixedDelay(() -> {
      try {
        for (int n = 0; n < 50 && next.get() < EVENTS; n++) {
          int i = next.getAndIncrement();
          String key = "k" + i % 17;
          Message m = Message.builder().destination(topic).key(key).type("Test")
              .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).build();
          db.commit(outbox, m);
          synchronized (expected) {
            expected.computeIfAbsent(key, k -> new ArrayList<>()).add(m.id().toString());
          }
        }
        if (next.get() >= EVENTS) {
          written.complete(null);
          throw new CancellationException("done"); // ends the schedule
        }
      } catch (SQLException e) {
        written.completeExceptionally(e);
        throw new IllegalStateException(e);
      }
    }, 0, 20, TimeUnit.MILLISECONDS);
    return written;
  }

  private static Process startRelay(LogicalDatabase db, KafkaBroker kafka, Path dir, int n) throws Exception {
    return ChildProcess.start(List.of("-Xmx128m"), RelayProcess.class.getName(),
        List.of(LogicalDatabase.jdbcUrl(), db.schema, kafka.bootstrapServers()), dir.resolve("relay-" + n + ".log"));
  }

  private static Process startRelay(LogicalDatabase db, KafkaBroker kafka, Path dir, String name, int batchSize)
      throws Exception {
    return ChildProcess.start(List.of("-Xmx128m"), RelayProcess.class.getName(),
        List.of(LogicalDatabase.jdbcUrl(), db.schema, kafka.bootstrapServers(), Integer.toString(batchSize)),
        dir.resolve("relay-" + name + ".log"));
  }

  static int activePid(LogicalDatabase db) throws Exception {
    await().atMost(Duration.ofSeconds(30)).until(() -> activePidOrZero(db) != 0);
    return activePidOrZero(db);
  }

  static int activePidOrZero(LogicalDatabase db) throws Exception {
    try (Connection c = db.dataSource.getConnection();
        PreparedStatement p = c.prepareStatement("SELECT coalesce(active_pid, 0) FROM pg_replication_slots WHERE slot_name = ?")) {
      p.setString(1, db.schema);
      try (ResultSet rs = p.executeQuery()) {
        return rs.next() ? rs.getInt(1) : 0;
      }
    }
  }
}
