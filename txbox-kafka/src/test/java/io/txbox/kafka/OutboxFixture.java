package io.txbox.kafka;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.RetryPolicy;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.TestDatabase;
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

/** A fresh outbox schema, a writer, and what the log says should arrive, per key. */
final class OutboxFixture implements AutoCloseable {
  final TestDatabase db = TestDatabase.create();
  final PostgresOutboxStore store;
  final Outbox outbox;

  OutboxFixture(int buckets) {
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(buckets).build();
    store.migrate();
    outbox = Outbox.create(store.writer());
  }

  /** A relay with settings fast enough for tests. */
  Relay.Builder relay(String bootstrapServers) {
    return relay(bootstrapServers, Duration.ofSeconds(6));
  }

  /** A relay whose producer gives a record up after {@code deliveryTimeout} (at least 2 s, its request timeout). */
  Relay.Builder relay(String bootstrapServers, Duration deliveryTimeout) {
    KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(bootstrapServers)
        .property("delivery.timeout.ms", Long.toString(deliveryTimeout.toMillis()))
        .property("request.timeout.ms", "2000")
        .property("max.block.ms", "2000")
        .build();
    return Relay.builder(store.relay(), publisher)
        .batchSize(100)
        .idleInterval(Duration.ofMillis(20))
        .heartbeatInterval(Duration.ofMillis(200))
        .leaseDuration(Duration.ofSeconds(1))
        .retryPolicy(RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(20)).maxDelay(Duration.ofMillis(500)).maxAttempts(3).build());
  }

  static Message event(String topic, String key, int seq) {
    return Message.builder().type("Test").destination(topic).key(key)
        .payload((key + ":" + seq).getBytes(StandardCharsets.UTF_8)).build();
  }

  /** Writes each message in its own committed transaction. */
  void commit(Message... messages) throws SQLException {
    for (Message m : messages) {
      try (Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        outbox.send(c, m);
        c.commit();
      }
    }
  }

  /** Writes the messages in one committed transaction. */
  void commitTogether(Message... messages) throws SQLException {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      for (Message m : messages) {
        outbox.send(c, m);
      }
      c.commit();
    }
  }

  /** Writes {@code count} events over {@code keys} keys, one transaction each. */
  void commitMany(String topic, int count, int keys) throws SQLException {
    for (int i = 0; i < count; i++) {
      commit(event(topic, "key-" + (i % keys), i));
    }
  }

  /** The ids the log holds for {@code topic}, per key, in log order: what must arrive, and how. */
  Map<String, List<String>> expectedByKey(String topic) throws SQLException {
    Map<String, List<String>> byKey = new LinkedHashMap<>();
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement("SELECT key, id FROM " + store.operator().outboxTable()
            + " WHERE destination = ? ORDER BY tx_id, position")) {
      p.setString(1, topic);
      try (ResultSet rs = p.executeQuery()) {
        while (rs.next()) {
          byKey.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getObject(2, UUID.class).toString());
        }
      }
    }
    return byKey;
  }

  static int total(Map<String, List<String>> byKey) {
    return byKey.values().stream().mapToInt(List::size).sum();
  }

  /** Reads {@code topic} until every expected id arrived, or a minute passes. */
  static List<TopicReader.Received> readAll(String bootstrap, String topic, int expected) {
    try (TopicReader reader = TopicReader.open(bootstrap, topic)) {
      return reader.readUntil(r -> TopicReader.distinctIds(r).size() >= expected, Duration.ofSeconds(60));
    }
  }

  void execute(String sql) throws SQLException {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(sql.replace("{schema}", db.schema()))) {
      p.execute();
    }
  }

  int count(String sql) throws SQLException {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement p = c.prepareStatement(sql.replace("{schema}", db.schema()));
        ResultSet rs = p.executeQuery()) {
      rs.next();
      return rs.getInt(1);
    }
  }

  @Override
  public void close() {
    db.close();
  }
}
