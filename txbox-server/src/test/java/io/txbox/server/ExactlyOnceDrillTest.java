package io.txbox.server;

import static org.awaitility.Awaitility.await;

import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.TopicReader;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The exactly-once drills on PostgreSQL: relays SIGKILLed, and one frozen past its lease. */
@FaultDrill
class ExactlyOnceDrillTest extends PostgresExactlyOnceDrill {
  @Test
  void fourRelaysOneSigkilledEveryThreeSecondsDeliverEachOf200000EventsOnce() throws Exception {
    drainWhileKilling(4, 200_000);
  }

  @Test
  void aRelayFrozenLongerThanItsLeaseThenLetGoMakesNothingVisibleTwice() throws Exception {
    int events = 30_000;
    kafka.createTopic(topic, 8);
    try (RelayProcesses relays = new RelayProcesses();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      Process frozen = relays.start(dir, relayArgs(0));
      relays.start(dir, relayArgs(1));
      await().atMost(Duration.ofSeconds(60)).until(() -> owners() == 2);
      CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> writeEvents(events, 10));
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= events / 5, Duration.ofSeconds(60));
      signal("STOP", frozen); // mid-drain: most likely with a round in hand
      try {
        await().atMost(Duration.ofSeconds(30)).until(() -> count(
            "SELECT count(*) FROM {schema}.txbox_subscription WHERE owner LIKE 'relay-1/%' AND lease_until > now()")
            == PostgresOutboxStore.DEFAULT_BUCKETS);
        reader.readUntil(r -> TopicReader.distinctIds(r).size() >= events / 2, Duration.ofSeconds(60));
      } finally {
        signal("CONT", frozen);
      }
      writer.get(120, TimeUnit.SECONDS);
      reader.readUntil(r -> TopicReader.distinctIds(r).size() >= events, Duration.ofSeconds(120));
      List<TopicReader.Received> got = reader.readUntil(r -> false, Duration.ofSeconds(3)); // whatever the thawed relay might still commit

      assertDeliveredOnceInOrder(got, events, relays);
    }
  }

  private static void signal(String signal, Process process) throws Exception {
    new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start().waitFor();
  }
}
