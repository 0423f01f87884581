package io.txbox.kafka.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The producers of one publisher: one with the configured {@code batch.size} for every topic that
 * accepts batches that large, and one per smaller size for topics whose {@code max.message.bytes}
 * is below it.
 *
 * <p>Why: when the broker refuses a batch as too large, the Kafka client splits it into batches
 * of {@code batch.size} and sends again. If {@code batch.size} is above the topic's limit, the
 * split batches are refused too, and the client splits again without end until its network
 * thread dies of a {@link StackOverflowError} (KAFKA-8350, KAFKA-8202): one over-size event then
 * stalls every topic. A batch never larger than its topic's limit can only be refused for a
 * single record that is itself too large, which the client reports as that record's own error.
 * Sizes are rounded down to a power of two, so a few producers serve any mix of limits.
 *
 * <p>Each producer's network thread is watched: a producer whose thread died completes no send
 * again, so {@link #replaceDead()} closes it and the next send builds a new one.
 */
public final class Producers implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Producers.class);
  private static final String NETWORK_THREAD = "kafka-producer-network-thread";

  /** A producer and the thread that sends for it, when it could be found. */
  public record Handle(Producer<byte[], byte[]> producer, Thread networkThread, int batchSize) {
    /** False once the network thread died: the producer will never complete a send again. */
    public boolean alive() {
      return networkThread == null || networkThread.isAlive();
    }
  }

  private final Map<String, Object> config;
  private final int batchSize;
  private final Map<Integer, Handle> bySize = new HashMap<>();

  /** Producers built from {@code config}, whose {@code batch.size} is the largest batch used. */
  public Producers(Map<String, Object> config) {
    this.config = Map.copyOf(config);
    this.batchSize = Integer.parseInt(config.get(ProducerConfig.BATCH_SIZE_CONFIG).toString());
  }

  /** The producer for a topic that accepts batches of at most {@code maxMessageBytes}, if known. */
  public synchronized Handle forLimit(OptionalInt maxMessageBytes) {
    int size = batchSizeFor(maxMessageBytes);
    return bySize.computeIfAbsent(size, this::create);
  }

  /** The batch size that keeps every batch within the limit: the configured one, or less. */
  int batchSizeFor(OptionalInt maxMessageBytes) {
    if (maxMessageBytes.isEmpty() || maxMessageBytes.getAsInt() >= batchSize) {
      return batchSize;
    }
    return Integer.highestOneBit(Math.max(1, maxMessageBytes.getAsInt()));
  }

  /**
   * Closes every producer whose network thread died.
   *
   * @return the dead ones' thread names, empty when all are alive
   */
  public synchronized List<String> replaceDead() {
    List<String> dead = new ArrayList<>();
    bySize.values().removeIf(h -> {
      if (h.alive()) {
        return false;
      }
      dead.add(h.networkThread().getName());
      h.producer().close(Duration.ZERO);
      return true;
    });
    return dead;
  }

  /** Closes {@code handle}'s producer at once, aborting what it still holds; the next use builds a new one. */
  public synchronized void discard(Handle handle) {
    if (bySize.remove(handle.batchSize(), handle)) {
      handle.producer().close(Duration.ZERO);
    }
  }

  /** Closes every producer at once. */
  public synchronized void discardAll() {
    bySize.values().forEach(h -> h.producer().close(Duration.ZERO));
    bySize.clear();
  }

  private Handle create(int size) {
    Map<String, Object> settings = new HashMap<>(config);
    settings.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(size));
    Object clientId = config.get(ProducerConfig.CLIENT_ID_CONFIG);
    if (clientId != null && size != batchSize) {
      settings.put(ProducerConfig.CLIENT_ID_CONFIG, clientId + "-batch-" + size);
    }
    Set<Thread> before = networkThreads();
    KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(settings, new ByteArraySerializer(), new ByteArraySerializer());
    Thread thread = networkThreadOf(producer, before);
    if (size != batchSize) {
      log.info("Kafka producer with batch.size {} for topics whose max.message.bytes is below {}", size, batchSize);
    }
    return new Handle(producer, thread, size);
  }

  /**
   * The producer's network thread: named after its client id, and started by its constructor, so
   * among the threads of that name it is the one that was not there before. {@code null} when that
   * is ambiguous (another producer of the same client id started at the same moment): the
   * publisher's flush deadline still catches a dead producer then, only later.
   */
  private static Thread networkThreadOf(KafkaProducer<byte[], byte[]> producer, Set<Thread> before) {
    String clientId = producer.metrics().keySet().stream()
        .map(name -> name.tags().get("client-id")).filter(id -> id != null).findFirst().orElse(null);
    if (clientId == null) {
      return null;
    }
    String name = NETWORK_THREAD + " | " + clientId;
    List<Thread> found = networkThreads().stream()
        .filter(t -> t.getName().equals(name) && !before.contains(t)).toList();
    return found.size() == 1 ? found.get(0) : null;
  }

  private static Set<Thread> networkThreads() {
    Set<Thread> threads = new HashSet<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith(NETWORK_THREAD)) {
        threads.add(t);
      }
    }
    return threads;
  }

  @Override
  public synchronized void close() {
    bySize.values().forEach(h -> h.producer().close(Duration.ofSeconds(10)));
    bySize.clear();
  }
}
