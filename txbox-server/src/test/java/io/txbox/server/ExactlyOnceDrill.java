package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every exactly-once drill shares, whatever the database: {@code txbox relay --delivery
 * exactly-once} as separate processes, SIGKILLed one after another while a backlog drains, counted
 * by a read_committed consumer that reads the whole topic: every event once, in order per key,
 * nothing dead-lettered.
 */
abstract class ExactlyOnceDrill {
  private static final Logger log = LoggerFactory.getLogger(ExactlyOnceDrill.class);
  private static final int KEYS = 50;
  /** SIGKILLs, one every ~3 s, while the drain goes on; then the drain finishes undisturbed. */
  private static final int KILLS = 10;
  /**
   * The writer spreads its events over at least this long, so that a drain faster than the kills
   * (MariaDB's, on a quiet machine, was done after two) still sees at least three of them.
   */
  private static final Duration SHORTEST_WRITE = Duration.ofSeconds(12);
  protected final KafkaBroker kafka = KafkaBroker.shared();
  protected final String topic = "eos-drill-" + UUID.randomUUID();
  @TempDir Path dir;

  /** The database options of {@code txbox relay}. */
  abstract List<String> databaseArgs();

  abstract DataSource dataSource();

  abstract Outbox outbox();

  /** The ids the outbox holds, per key, in the order the relay must keep. */
  abstract Map<String, List<String>> expectedByKey() throws SQLException;

  /** How many relays hold a live lease. */
  abstract int owners() throws SQLException;

  abstract long deadLetters() throws SQLException;

  /** Where the relays and the counting consumer find Kafka: the run's shared broker unless a drill brings its own. */
  String bootstrapServers() {
    return kafka.bootstrapServers();
  }

  /** The prefix of the relays' transactional ids: this drill's own. */
  String transactionalIdPrefix() {
    return "drill-" + topic + "-";
  }

  List<String> relayArgs(int index) {
    List<String> args = new ArrayList<>(databaseArgs());
    args.addAll(List.of("--kafka-bootstrap-servers", bootstrapServers(), "--instance-id", "relay-" + index,
        "--delivery", "exactly-once", "--kafka-transactional-id-prefix", transactionalIdPrefix(),
        "--batch-size", "500", "--idle-interval", "20ms", "--heartbeat-interval", "250ms", "--lease-duration", "2s"));
    return args;
  }

  /** {@code relays} relays drain {@code events} while one of them is SIGKILLed every ~3 s, ten times at most. */
  void drainWhileKilling(int relayCount, int events) throws Exception {
    kafka.createTopic(topic, 8);
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      List<Process> running = new ArrayList<>();
      for (int i = 0; i < relayCount; i++) {
        running.add(relays.start(dir, relayArgs(i)));
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> owners() == relayCount);
      CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> writeEvents(events, 100));
      int kills = 0;
      List<TopicReader.Received> got = List.of();
      while (TopicReader.distinctIds(got).size() < events && kills < KILLS) {
        got = reader.readUntil(r -> false, Duration.ofSeconds(3));
        if (TopicReader.distinctIds(got).size() < events) {
          int victim = kills % relayCount;
          running.get(victim).destroyForcibly(); // SIGKILL mid-round: no abort, no drain
          running.get(victim).waitFor(10, TimeUnit.SECONDS);
          running.set(victim, relays.start(dir, relayArgs(victim)));
          kills++;
          log.info("exactly-once drill: {} of {} read, killed relay {} ({} kills)",
              TopicReader.distinctIds(got).size(), events, victim, kills);
        }
      }
      // the writer competes for two cores with relays that keep starting: how long it takes is
      // not what a drill proves, so it gets all the time the drain does
      writer.get(180, TimeUnit.SECONDS);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= events, Duration.ofSeconds(180));
      got = reader.readUntil(r -> false, Duration.ofSeconds(2)); // anything a zombie might still make visible

      assertThat(kills).as("relays killed during the drain").isGreaterThanOrEqualTo(3);
      assertDeliveredOnceInOrder(got, events, relays);
    }
  }

  void assertDeliveredOnceInOrder(List<TopicReader.Received> got, int events, RelayProcesses relays)
      throws Exception {
    List<Long> paths = List.copyOf(relays.linesWith(List.of("which the broker committed beyond the store's",
        "may or may not have committed", "aborted the round's transaction", "the broker fenced this relay's round"))
        .values());
    log.info("exactly-once drill: the relays logged {} bucket(s) going on from Kafka's checkpoint beyond the"
        + " database's, {} round(s) of unknown outcome, {} aborted, {} fenced",
        paths.get(0), paths.get(1), paths.get(2), paths.get(3));
    Map<String, Long> copies = new LinkedHashMap<>();
    got.forEach(r -> copies.merge(r.id(), 1L, Long::sum));
    long twice = copies.values().stream().filter(n -> n > 1).count();
    assertThat(copies).as("distinct events read\n" + relays.logTails(15)).hasSize(events);
    assertThat(twice).as("events read more than once").isZero();
    assertThat(TopicReader.firstDeliveriesByKey(got)).as("order per key").isEqualTo(expectedByKey());
    assertThat(deadLetters()).as("dead letters").isZero();
  }

  /**
   * Writes {@code count} events, {@code perTransaction} to a transaction, over 50 keys, taking at
   * least {@link #SHORTEST_WRITE}.
   */
  void writeEvents(int count, int perTransaction) {
    writeEvents(count, perTransaction, SHORTEST_WRITE);
  }

  /** Writes {@code count} events, {@code perTransaction} to a transaction, spread over at least {@code shortest}. */
  void writeEvents(int count, int perTransaction, Duration shortest) {
    long start = System.nanoTime();
    try {
      for (int i = 0; i < count; ) {
        pace(start, i, count, shortest);
        try (Connection c = dataSource().getConnection()) {
          c.setAutoCommit(false);
          List<Message> batch = new ArrayList<>(perTransaction);
          for (int j = 0; j < perTransaction && i < count; j++, i++) {
            batch.add(Message.builder().type("Test").destination(topic).key("key-" + (i % KEYS))
                .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).build());
          }
          outbox().send(c, batch); // one batched insert: the writer keeps ahead of the drain
          c.commit();
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Sleeps until {@code written} of {@code count} events are due, when all are due after {@code shortest}. */
  private static void pace(long startNanos, int written, int count, Duration shortest) {
    long dueNanos = startNanos + shortest.toNanos() * written / count;
    long aheadMillis = TimeUnit.NANOSECONDS.toMillis(dueNanos - System.nanoTime());
    if (aheadMillis > 0) {
      try {
        Thread.sleep(aheadMillis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
  }
}
