package io.txbox.testkit;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads a whole topic from the beginning, for tests that check what a relay delivered: nothing
 * lost (every id present) and order per key (first deliveries of each key in write order;
 * at-least-once re-sends may repeat later).
 *
 * <pre>{@code
 * try (TopicReader reader = TopicReader.open(kafka.bootstrapServers(), "orders")) {
 *   List<TopicReader.Received> all = reader.readUntil(r -> TopicReader.distinctIds(r).size() >= 1000,
 *       Duration.ofSeconds(60));
 * }
 * }</pre>
 */
public final class TopicReader implements AutoCloseable {
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final List<Received> received = new ArrayList<>();

  /** A record as delivered: key, txbox id header, payload, all headers, partition and offset. */
  public record Received(
      String key, String id, byte[] value, Map<String, String> headers, int partition, long offset) {}

  private TopicReader(KafkaConsumer<byte[], byte[]> consumer) {
    this.consumer = consumer;
  }

  /** Opens a reader positioned at the beginning of every partition of {@code topic}. */
  public static TopicReader open(String bootstrapServers, String topic) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
        .map(info -> new TopicPartition(topic, info.partition()))
        .toList();
    if (partitions.isEmpty()) {
      consumer.close();
      throw new IllegalStateException("topic " + topic + " does not exist: create it before reading it");
    }
    consumer.assign(partitions);
    consumer.seekToBeginning(partitions);
    return new TopicReader(consumer);
  }

  /** Polls until {@code done} holds for everything read so far, or the timeout passes. */
  public List<Received> readUntil(Predicate<List<Received>> done, Duration timeout) {
    Instant deadline = Instant.now().plus(timeout);
    while (!done.test(received) && Instant.now().isBefore(deadline)) {
      for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
        received.add(toReceived(r));
      }
    }
    return List.copyOf(received);
  }

  /** The distinct txbox ids among the records. */
  public static Set<String> distinctIds(List<Received> records) {
    Set<String> ids = new LinkedHashSet<>();
    records.forEach(r -> ids.add(r.id()));
    return ids;
  }

  /** Per key, the ids in order of their first delivery; re-sent duplicates are left out. */
  public static Map<String, List<String>> firstDeliveriesByKey(List<Received> records) {
    Map<String, List<String>> byKey = new LinkedHashMap<>();
    Set<String> seen = new LinkedHashSet<>();
    records.stream()
        .sorted((a, b) -> a.partition() != b.partition()
            ? Integer.compare(a.partition(), b.partition()) : Long.compare(a.offset(), b.offset()))
        .filter(r -> seen.add(r.id()))
        .forEach(r -> byKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.id()));
    return byKey;
  }

  private static Received toReceived(ConsumerRecord<byte[], byte[]> r) {
    Map<String, String> headers = new LinkedHashMap<>();
    for (Header h : r.headers()) {
      headers.put(h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8));
    }
    String key = r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
    return new Received(key, headers.get("txbox-id"), r.value(), headers, r.partition(), r.offset());
  }

  @Override
  public void close() {
    consumer.close(Duration.ofSeconds(5));
  }
}
