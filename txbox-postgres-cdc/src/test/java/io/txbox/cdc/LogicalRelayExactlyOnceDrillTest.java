package io.txbox.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Outbox;
import io.txbox.testkit.ChildProcess;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Drill 7 of exactly-once delivery: logical relays with {@code delivery exactly-once} in processes
 * of their own, the streaming one SIGKILLed mid-drain while a standby waits, counted by a
 * read_committed consumer that reads the whole topic: every event once, in order per key.
 */
@FaultDrill
class LogicalRelayExactlyOnceDrillTest {
  private static final int BATCH = 100;

  @ParameterizedTest
  @EnumSource(LogicalRelayTest.WriteMode.class)
  void killedRelaysDeliverEveryEventOnceAsStandbysTakeOver(LogicalRelayTest.WriteMode mode) throws Exception {
    KafkaBroker kafka = KafkaBroker.shared();
    String topic = "cdc-eos-" + UUID.randomUUID();
    kafka.createTopic(topic, 4);
    Path dir = Files.createTempDirectory("txbox-cdc-eos");
    List<Process> relays = new ArrayList<>();
    int events = LogicalRelayCrashTest.EVENTS;
    try (LogicalDatabase db = LogicalDatabase.fresh();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      try {
        Outbox outbox = mode.outbox(db);
        Map<String, List<String>> expected = new LinkedHashMap<>();
        ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
        LogicalRelayCrashTest.killWhileWriting(db, reader, relays, n -> startRelay(db, kafka, dir, n),
            () -> LogicalRelayCrashTest.writeSpread(scheduler, db, outbox, topic, expected), mode + ", exactly once")
            .get(120, TimeUnit.SECONDS);
        scheduler.shutdown();
        reader.readUntil(r -> TopicReader.distinctIds(r).size() >= events, Duration.ofSeconds(120));
        List<TopicReader.Received> got = reader.readUntil(r -> false, Duration.ofSeconds(2)); // and any late copy
        System.out.printf("%s: %d records for %d events after %d kills; passed after restarts: %s%n", mode, got.size(),
            events, LogicalRelayCrashTest.KILLS, passedCounts(dir));
        assertThat(TopicReader.distinctIds(got)).as("every event").hasSize(events);
        assertThat(got).as("no event twice").hasSize(events);
        assertThat(TopicReader.firstDeliveriesByKey(got)).as("each key's order").isEqualTo(expected);
        assertThat(db.deadLetters()).as("dead letters").isZero();
      } finally {
        relays.forEach(Process::destroyForcibly);
        for (Process p : relays) {
          p.waitFor(10, TimeUnit.SECONDS);
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> LogicalRelayCrashTest.activePidOrZero(db) == 0);
      }
    }
  }

  /**
   * The slot can confirm a transaction only once all of it is delivered, so a relay killed inside
   * one larger than a batch leaves the slot before it; the next relay reads it whole again, and
   * only the place the broker holds keeps the batches already committed from being sent twice.
   */
  @Test
  void aTransactionLargerThanABatchIsNotSentAgainByTheRelayAfterAKill() throws Exception {
    KafkaBroker kafka = KafkaBroker.shared();
    String topic = "cdc-eos-large-" + UUID.randomUUID();
    kafka.createTopic(topic, 4);
    Path dir = Files.createTempDirectory("txbox-cdc-eos-large");
    int events = 20_000;
    try (LogicalDatabase db = LogicalDatabase.fresh();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      db.exec("INSERT INTO " + db.store.operator().outboxTable() + " (id, key, type, destination, payload, content_type, headers,"
          + " created_at) SELECT gen_random_uuid(), 'k' || i % 17, 'Test', '" + topic + "',"
          + " convert_to(i::text, 'UTF8'), 'text/plain', '{}'::jsonb, now() FROM generate_series(1, " + events + ") i");
      Process first = startRelay(db, kafka, dir, 0);
      Process second = null;
      try {
        reader.readUntil(r -> r.size() >= events / 10, Duration.ofSeconds(60));
        first.destroyForcibly().waitFor(10, TimeUnit.SECONDS); // SIGKILL, inside the one transaction
        second = startRelay(db, kafka, dir, 1);
        reader.readUntil(r -> TopicReader.distinctIds(r).size() >= events, Duration.ofSeconds(120));
        List<TopicReader.Received> got = reader.readUntil(r -> false, Duration.ofSeconds(2));
        List<String> passed = passedCounts(dir);
        System.out.printf("one transaction of %d events, killed after %d: %d records; the second relay passed %s%n",
            events, events / 10, got.size(), passed);
        if (passed.size() != 1 || got.size() != events) {
          printTroubles(dir); // why a session restarted, for the one reading a failed run
        }
        assertThat(passed).as("events passed by the second relay").hasSize(1);
        assertThat(Integer.parseInt(passed.get(0))).isGreaterThanOrEqualTo(events / 10);
        assertThat(got).as("no event twice").hasSize(events);
        assertThat(TopicReader.distinctIds(got)).hasSize(events);
      } finally {
        first.destroyForcibly();
        if (second != null) {
          second.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> LogicalRelayCrashTest.activePidOrZero(db) == 0);
      }
    }
  }

  /** What each relay's log says it passed, read again after a restart, because Kafka held it. */
  private static List<String> passedCounts(Path dir) throws Exception {
    List<String> lines = new ArrayList<>();
    try (var files = Files.list(dir)) {
      for (Path log : files.sorted().toList()) {
        Files.readAllLines(log).stream().filter(l -> l.contains("read again from the slot that were delivered before"))
            .forEach(l -> lines.add(l.replaceAll(".*passed (\\d+) event.*", "$1")));
      }
    }
    return lines;
  }

  /** Prints the relays' warnings and errors, at most 40 lines of each log. */
  private static void printTroubles(Path dir) throws Exception {
    try (var files = Files.list(dir)) {
      for (Path log : files.sorted().toList()) {
        System.out.println("-- " + log.getFileName() + ", its warnings and errors:");
        Files.readAllLines(log).stream().filter(l -> l.contains(" WARN ") || l.contains(" ERROR ")
            || l.startsWith("Caused by")).limit(40).forEach(System.out::println);
      }
    }
  }

  private static Process startRelay(LogicalDatabase db, KafkaBroker kafka, Path dir, int n) throws Exception {
    return ChildProcess.start(List.of("-Xmx128m"), RelayProcess.class.getName(),
        List.of(LogicalDatabase.jdbcUrl(), db.schema, kafka.bootstrapServers(), Integer.toString(BATCH),
            "exactly-once"), dir.resolve("relay-" + n + ".log"));
  }
}
