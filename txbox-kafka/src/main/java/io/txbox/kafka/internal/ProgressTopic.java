package io.txbox.kafka.internal;

import io.txbox.TxboxException;
import io.txbox.spi.Checkpoint;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Where exactly-once delivery keeps each bucket's checkpoint at the broker: a compacted topic
 * whose partition {@code bucket % partitions} holds, for each committed round, one record per
 * bucket of it (key the bucket, value {@code 1:<txId>:<position>}, header {@value #WRITER_HEADER}
 * the writing transactional id, header {@value #OUTBOX_HEADER} the outbox's id, header {@value
 * #NOTE_HEADER} the relay's note when it keeps one). Written only
 * inside the round's transaction; read with {@code read_committed}, so an aborted round's
 * checkpoint is never seen. A checkpoint that another outbox wrote is refused: its positions are
 * another log's.
 *
 * <p>A new topic gets {@value #DEFAULT_PARTITIONS} partitions (fewer when the outbox has fewer
 * buckets), not one per bucket: each partition a round writes is added to its transaction and
 * gets a commit marker, and a round over 64 buckets spent most of its time on those. An existing
 * topic keeps its partition count (one made with one partition per bucket maps each bucket to
 * its own partition, as before).
 */
public final class ProgressTopic implements AutoCloseable {
  /** Header naming the transactional id that wrote a checkpoint, for operators. */
  public static final String WRITER_HEADER = "txbox-writer";
  /** Header naming the outbox whose checkpoint a record is ({@code RelayStore.outboxId}). */
  public static final String OUTBOX_HEADER = "txbox-outbox";
  /** Header holding the note a relay keeps beside a checkpoint ({@code TransactionalPublisher.commit(Map, Map)}). */
  public static final String NOTE_HEADER = "txbox-note";
  private static final Pattern OUTBOX_ID = Pattern.compile("[0-9a-fA-F-]{1,64}");
  /** Partitions of a progress topic txbox creates, at most one per bucket. */
  public static final int DEFAULT_PARTITIONS = 8;
  /** Records read back at first from a partition's end; a bucket's last checkpoint is almost always among them. */
  private static final int FIRST_WINDOW = 256;

  private final String name;
  /** The topic's partitions: bucket {@code b}'s checkpoints are in partition {@code b % partitions}. */
  private final int partitions;
  /** Reads committed records only. */
  private final KafkaConsumer<byte[], byte[]> consumer;
  /** Tells the high watermark, which a commit's markers reach after the commit returned. */
  private final KafkaConsumer<byte[], byte[]> watermarks;
  private final Duration timeout;
  /** This outbox's id, or null where its store keeps none: then any checkpoint is taken. */
  private final String outboxId;

  private ProgressTopic(String name, int partitions, Map<String, Object> producerConfig, Duration timeout,
      String outboxId) {
    this.name = name;
    this.partitions = partitions;
    this.outboxId = outboxId;
    this.consumer = consumer(producerConfig, "read_committed");
    this.watermarks = consumer(producerConfig, "read_uncommitted");
    this.timeout = timeout;
  }

  /**
   * The progress topic {@code name}, created (compacted, the broker's replication factor, {@link
   * #DEFAULT_PARTITIONS} partitions or one per bucket where there are fewer) when missing; an
   * existing one is used with the partitions it has. {@code outboxId} (null for none) is written
   * with each checkpoint and checked on each read.
   */
  public static ProgressTopic open(String name, int buckets, Supplier<Admin> admins, Map<String, Object> producerConfig,
      Duration timeout, String outboxId) {
    int partitions;
    try (Admin admin = admins.get()) {
      partitions = partitions(admin, name, timeout);
      if (partitions == 0) {
        partitions = Math.min(buckets, DEFAULT_PARTITIONS);
        partitions = create(admin, name, partitions, timeout);
      }
    }
    return new ProgressTopic(name, partitions, producerConfig, timeout, outboxId);
  }

  private static int partitions(Admin admin, String name, Duration timeout) {
    try {
      TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames()
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS).get(name);
      return d.partitions().size();
    } catch (ExecutionException e) {
      if (e.getCause() instanceof UnknownTopicOrPartitionException) {
        return 0;
      }
      throw new TxboxException("cannot describe the progress topic " + name + ": " + e.getCause(), e);
    } catch (InterruptedException | TimeoutException e) {
      throw interrupted("describing the progress topic " + name, e);
    }
  }

  /** Creates the topic with {@code partitions} partitions; returns the partitions it has, when another relay made it first. */
  private static int create(Admin admin, String name, int partitions, Duration timeout) {
    // Compacted, and in segments of ten minutes at most, so that the cleaner keeps the tail a
    // take-over reads back short (a segment is compacted only once a newer one is written).
    NewTopic topic = new NewTopic(name, Optional.of(partitions), Optional.empty())
        .configs(Map.of("cleanup.policy", "compact", "segment.ms", "600000", "min.cleanable.dirty.ratio", "0.1"));
    try {
      admin.createTopics(List.of(topic)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return partitions;
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw new TxboxException("cannot create the progress topic " + name + " (the relay needs the Kafka ACL"
            + " CREATE on it, or create it yourself: compacted, " + partitions + " partitions): " + e.getCause(), e);
      }
      return partitions(admin, name, timeout); // another relay made it first
    } catch (InterruptedException | TimeoutException e) {
      throw interrupted("creating the progress topic " + name, e);
    }
  }

  private static KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> producerConfig, String isolation) {
    Map<String, Object> c = new HashMap<>();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, producerConfig.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG));
    producerConfig.forEach((k, v) -> {
      if (k.startsWith("security.") || k.startsWith("sasl.") || k.startsWith("ssl.")) {
        c.put(k, v);
      }
    });
    c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    return new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  public String name() {
    return name;
  }

  /** How many partitions the topic has. */
  public int partitions() {
    return partitions;
  }

  private TopicPartition partitionOf(int bucket) {
    return new TopicPartition(name, bucket % partitions);
  }

  /** The record that keeps {@code checkpoint} as {@code bucket}'s, to send inside the round's transaction. */
  public ProducerRecord<byte[], byte[]> record(int bucket, Checkpoint checkpoint, String writer, String note) {
    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(name, partitionOf(bucket).partition(),
        utf8(Integer.toString(bucket)),
        utf8("1:" + Long.toUnsignedString(checkpoint.txId()) + ":" + checkpoint.position()));
    r.headers().add(WRITER_HEADER, utf8(writer));
    if (outboxId != null) {
      r.headers().add(OUTBOX_HEADER, utf8(outboxId));
    }
    if (note != null) {
      r.headers().add(NOTE_HEADER, utf8(note));
    }
    return r;
  }

  /** A bucket's last committed checkpoint, and the note kept beside it, or {@code null}. */
  public record Kept(Checkpoint checkpoint, String note) {}

  /**
   * The last committed checkpoint of each of {@code buckets} that has one. Waits until every
   * transaction that wrote the buckets' partitions before this call is decided, then reads each
   * partition up to its last stable offset, from near its end first and further back only for the
   * buckets that window held none of.
   */
  public synchronized Map<Integer, Kept> read(Collection<Integer> buckets) {
    Map<Integer, Kept> found = new TreeMap<>();
    Map<TopicPartition, Set<Integer>> wanted = new HashMap<>();
    for (int b : buckets) {
      wanted.computeIfAbsent(partitionOf(b), tp -> new HashSet<>()).add(b);
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    Map<TopicPartition, Long> end = settled(new ArrayList<>(wanted.keySet()), deadline);
    Map<TopicPartition, Long> begin = consumer.beginningOffsets(wanted.keySet(), timeout);
    long window = FIRST_WINDOW;
    while (!wanted.isEmpty()) {
      List<TopicPartition> left = new ArrayList<>(wanted.keySet());
      consumer.assign(left);
      Map<TopicPartition, Long> from = new HashMap<>();
      for (TopicPartition tp : left) {
        from.put(tp, Math.max(begin.get(tp), end.get(tp) - window));
        consumer.seek(tp, from.get(tp));
      }
      Map<Integer, ConsumerRecord<byte[], byte[]>> last = readUpTo(left, end, deadline);
      for (TopicPartition tp : left) {
        Set<Integer> missing = wanted.get(tp);
        for (Integer bucket : Set.copyOf(missing)) {
          ConsumerRecord<byte[], byte[]> r = last.get(bucket);
          if (r != null) {
            found.put(bucket, new Kept(parse(r), note(r)));
            missing.remove(bucket);
          }
        }
        if (missing.isEmpty() || from.get(tp) <= begin.get(tp)) {
          wanted.remove(tp); // found, or none at all: read from the partition's start
        }
      }
      window *= 16; // the rest wrote nothing near the end: look further back
    }
    consumer.assign(List.of());
    return found;
  }

  /**
   * The last stable offsets of {@code partitions}, once every transaction that wrote them before
   * this call is decided: a round's commit returns before its markers are written, and an earlier
   * owner of these buckets was fenced (its open transaction aborted), so no transaction of a
   * bucket read here can still be open past that point. Other relays' rounds on the same
   * partitions end within a round.
   */
  private Map<TopicPartition, Long> settled(List<TopicPartition> partitions, long deadline) {
    Map<TopicPartition, Long> high = watermarks.endOffsets(partitions, timeout);
    while (true) {
      Map<TopicPartition, Long> stable = consumer.endOffsets(partitions, timeout);
      if (partitions.stream().allMatch(tp -> stable.get(tp) >= high.get(tp))) {
        return stable;
      }
      if (System.nanoTime() - deadline > 0) {
        throw new TxboxException("a transaction stayed open on the progress topic " + name + " for " + timeout
            + ": a relay that was not fenced still writes these buckets");
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new TxboxException("interrupted while reading the progress topic " + name, e);
      }
    }
  }

  /** Reads {@code partitions} from where they are up to {@code end}: the last record of each bucket met. */
  private Map<Integer, ConsumerRecord<byte[], byte[]>> readUpTo(List<TopicPartition> partitions,
      Map<TopicPartition, Long> end, long deadline) {
    Map<Integer, ConsumerRecord<byte[], byte[]>> last = new HashMap<>();
    Set<TopicPartition> reading = new HashSet<>(partitions);
    reading.removeIf(tp -> consumer.position(tp) >= end.get(tp));
    while (!reading.isEmpty()) {
      if (System.nanoTime() - deadline > 0) {
        throw new TxboxException("could not read the progress topic " + name + " to its end within " + timeout);
      }
      for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
        if (r.offset() < end.get(tp)) {
          last.put(bucketOf(r), r);
        }
      }
      reading.removeIf(tp -> consumer.position(tp) >= end.get(tp));
    }
    return last;
  }

  /** The bucket a record keeps the checkpoint of: its key; a record txbox did not write is refused. */
  private int bucketOf(ConsumerRecord<byte[], byte[]> r) {
    String key = r.key() == null ? "" : new String(r.key(), StandardCharsets.UTF_8);
    try {
      int bucket = Integer.parseInt(key);
      if (bucket >= 0 && bucket % partitions == r.partition()) {
        return bucket;
      }
    } catch (NumberFormatException e) {
      // refused below
    }
    throw new TxboxException("the progress topic " + name + " holds, at partition " + r.partition() + " offset "
        + r.offset() + ", a record txbox did not write (its key is no bucket of this partition): give this outbox a"
        + " progress topic of its own");
  }

  private static String note(ConsumerRecord<byte[], byte[]> r) {
    Header header = r.headers().lastHeader(NOTE_HEADER);
    return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
  }

  private Checkpoint parse(ConsumerRecord<byte[], byte[]> r) {
    refuseAnotherOutboxs(r);
    String value = r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8);
    String[] parts = value.split(":");
    if (parts.length != 3 || !parts[0].equals("1")) {
      throw new TxboxException("the progress topic " + name + " holds, at partition " + r.partition() + " offset "
          + r.offset() + ", a record txbox did not write (" + value.length() + " bytes): give this outbox a"
          + " progress topic of its own");
    }
    try {
      return new Checkpoint(Long.parseUnsignedLong(parts[1]), Long.parseLong(parts[2]));
    } catch (NumberFormatException e) {
      throw new TxboxException("the progress topic " + name + " holds an unreadable checkpoint at partition "
          + r.partition() + " offset " + r.offset(), e);
    }
  }

  /**
   * Refuses a checkpoint that names another outbox than this one: two outboxes that share a
   * cluster, a transactional-id prefix and a subscription would otherwise read each other's
   * positions, and skip or resend events. A checkpoint that names none (written before outboxes
   * had ids) is taken.
   */
  private void refuseAnotherOutboxs(ConsumerRecord<byte[], byte[]> r) {
    Header header = r.headers().lastHeader(OUTBOX_HEADER);
    if (outboxId == null || header == null || header.value() == null) {
      return;
    }
    String theirs = new String(header.value(), StandardCharsets.UTF_8);
    if (!theirs.equals(outboxId)) {
      String shown = OUTBOX_ID.matcher(theirs).matches() ? theirs : "an id txbox did not write";
      throw new TxboxException("the progress topic " + name + " holds, at partition " + r.partition() + " offset "
          + r.offset() + ", a checkpoint of another outbox (" + shown + "; this outbox is " + outboxId + "): two"
          + " outboxes share this Kafka cluster, transactional-id prefix and subscription. Give each outbox a"
          + " transactional-id prefix of its own (--kafka-transactional-id-prefix,"
          + " txbox.kafka.transactional-id-prefix) or its own progress topic; this relay sends nothing from"
          + " these buckets until then");
    }
  }

  private static TxboxException interrupted(String what, Exception e) {
    if (e instanceof InterruptedException) {
      Thread.currentThread().interrupt();
    }
    return new TxboxException("timed out or interrupted " + what, e);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public synchronized void close() {
    consumer.close(Duration.ofSeconds(5));
    watermarks.close(Duration.ofSeconds(5));
  }
}
