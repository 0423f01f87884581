package io.txbox.demo;

import io.txbox.server.DatabaseOptions;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.nio.charset.StandardCharsets;
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
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code java -jar txbox-demo.jar quickstart}: starts a Kafka broker of its own, writes events through the outbox
 * into the local PostgreSQL, relays them, reads the topic back and reports what arrived.
 */
@Command(name = "quickstart", mixinStandardHelpOptions = true,
    description = "Starts a Kafka broker, writes events through the outbox into PostgreSQL, relays them"
        + " and checks that every one arrived once, in order per key. Exits 1 if any was lost or reordered.")
final class QuickstartCommand implements Callable<Integer> {
  /** The quickstart writes into a schema of its own, never into an application's outbox. */
  private static final String SCHEMA = "txbox_quickstart";

  @Mixin DatabaseOptions database;

  @Option(names = "--events", defaultValue = "20000", description = "Events to write. Default: ${DEFAULT-VALUE}.")
  int events;

  @Option(names = "--keys", defaultValue = "100", description = "Distinct keys. Default: ${DEFAULT-VALUE}.")
  int keys;

  @Override
  public Integer call() throws Exception {
    if (events < 1 || keys < 1) {
      throw new IllegalArgumentException("events and keys must be >= 1, were " + events + " and " + keys);
    }
    System.out.println("starting a Kafka broker (KRaft, from the Kafka jars in this jar)...");
    String topic = "orders-" + UUID.randomUUID().toString().substring(0, 8);
    try (KafkaBroker kafka = KafkaBroker.start("768m"); HikariDataSource ds = database.pool()) {
      kafka.createTopic(topic, 8);
      database.checkConnection(ds);
      PostgresOutboxStore store = PostgresOutboxStore.builder(ds).schema(SCHEMA).build();
      store.migrate();
      long started = System.nanoTime();
      System.out.printf("writing %,d events over %d keys through Outbox.send into %s%n", events, keys, store.outboxTable());
      write(ds, Outbox.create(store), topic);
      System.out.println("relaying to Kafka at " + kafka.bootstrapServers() + " ...");
      List<TopicReader.Received> received;
      try (Relay relay = Relay.builder(store, KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
              .subscription(topic).build().start();
          TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
        received = reader.readUntil(r -> TopicReader.distinctIds(r).size() >= events, Duration.ofMinutes(5));
      }
      double seconds = (System.nanoTime() - started) / 1e9;
      return report(expected(ds, store, topic), received, seconds);
    }
  }

  private void write(HikariDataSource ds, Outbox outbox, String topic) throws SQLException {
    for (int i = 0; i < events; i += 10) {
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        List<Message> batch = new ArrayList<>();
        for (int j = i; j < Math.min(events, i + 10); j++) {
          String key = "order-" + (j % keys);
          batch.add(Message.builder().type("OrderPlaced").destination(topic).key(key)
              .payload(("{\"order\":\"" + key + "\",\"seq\":" + j + "}").getBytes(StandardCharsets.UTF_8),
                  "application/json")
              .build());
        }
        outbox.send(c, batch);
        c.commit();
      }
    }
  }

  /** What must arrive, per key, in log order. */
  private static Map<String, List<String>> expected(HikariDataSource ds, PostgresOutboxStore store, String topic)
      throws SQLException {
    Map<String, List<String>> byKey = new LinkedHashMap<>();
    try (Connection c = ds.getConnection(); PreparedStatement p = c.prepareStatement(
        "SELECT key, id FROM " + store.outboxTable() + " WHERE destination = ? ORDER BY tx_id, position")) {
      p.setString(1, topic);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          byKey.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getString(2));
        }
      }
    }
    return byKey;
  }

  private int report(Map<String, List<String>> expected, List<TopicReader.Received> received, double seconds) {
    Map<String, List<String>> delivered = TopicReader.firstDeliveriesByKey(received);
    long written = expected.values().stream().mapToLong(List::size).sum();
    long distinct = TopicReader.distinctIds(received).size();
    long reordered = expected.keySet().stream()
        .filter(k -> !expected.get(k).equals(delivered.getOrDefault(k, List.of()))).count();
    System.out.printf("%n%-28s %,12d%n", "events written", written);
    System.out.printf("%-28s %,12d%n", "delivered (distinct ids)", distinct);
    System.out.printf("%-28s %,12d%n", "re-sent duplicates", received.size() - distinct);
    System.out.printf("%-28s %,12d%n", "lost", written - distinct);
    System.out.printf("%-28s %,12d%n", "keys out of order", reordered);
    System.out.printf("%-28s %,12.1f s (%,.0f events/s, write and relay)%n", "elapsed", seconds, written / seconds);
    boolean ok = distinct == written && reordered == 0;
    System.out.println(ok ? "\nOK: every event arrived, in order per key." : "\nFAILED: see the figures above.");
    return ok ? 0 : 1;
  }
}
