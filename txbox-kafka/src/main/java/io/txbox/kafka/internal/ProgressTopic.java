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
 * Where exactly-once delivery keeps each bucket's checkpoint at the broker: a compacted topic with
 * one partition per bucket, which holds, for each committed round, one record per bucket of it
 * (key the bucket, value {@code 1:<txId>:<position>}, header {@value #WRITER_HEADER} the writing
 * transactional id, header {@value #OUTBOX_HEADER} the outbox's id). Written only inside the
 * round's transaction; read with {@code read_committed}, so an aborted round's checkpoint is never
 * seen. A checkpoint that another outbox wrote is refused: its positions are another log's.
 */
public final class ProgressTopic implements AutoCloseable {
  /** Header naming the transactional id that wrote a checkpoint, for operators. */
  public static final String WRITER_HEADER = "txbox-writer";
  /** Header naming the outbox whose checkpoint a record is ({@code RelayStore.outboxId}). */
  public static final String OUTBOX_HEADER = "txbox-outbox";
  private static final Pattern OUTBOX_ID = Pattern.compile("[0-9a-fA-F-]{1,64}");
  /** Records read back at first from a partition's end; a bucket's last checkpoint is almost always among them. */
  private static final int FIRST_WINDOW = 64;

  private final String name;
  /** Reads committed records only. */
  private final KafkaConsumer<byte[], byte[]> consumer;
  /** Tells the high watermark, which a commit's markers reach after the commit returned. */
  private final KafkaConsumer<byte[], byte[]> watermarks;
  private final Duration timeout;
  /** This outbox's id, or null where its store keeps none: then any checkpoint is taken. */
  private final String outboxId;

  private ProgressTopic(String name, Map<String, Object> producerConfig, Duration timeout, String outboxId) {
    this.name = name;
    this.outboxId = outboxId;
    this.consumer = consumer(producerConfig, "read_committed");
    this.watermarks = consumer(producerConfig, "read_uncommitted");
    this.timeout = timeout;
  }

  /**
   * The progress topic {@code name} with {@code buckets} partitions, created (compacted, the
   * broker's replication factor) when missing; refused when it has another partition count.
   * {@code outboxId} (null for none) is written with each checkpoint and checked on each read.
   */
  public static ProgressTopic open(String name, int buckets, Supplier<Admin> admins, Map<String, Object> producerConfig,
      Duration timeout, String outboxId) {
    try (Admin admin = admins.get()) {
      int partitions = partitions(admin, name, timeout);
      if (partitions == 0) {
        create(admin, name, buckets, timeout);
      } else if (partitions != buckets) {
        throw new TxboxException("the progress topic " + name + " has " + partitions + " partitions, but the outbox"
            + " has " + buckets + " buckets: each outbox and subscription needs a progress topic of its own, with one"
            + " partition per bucket. Name another (progressTopic), or delete this one if nothing uses it");
      }
    }
    return new ProgressTopic(name, producerConfig, timeout, outboxId);
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

  private static void create(Admin admin, String name, int buckets, Duration timeout) {
    NewTopic topic = new NewTopic(name, Optional.of(buckets), Optional.empty())
        .configs(Map.of("cleanup.policy", "compact"));
    try {
      admin.createTopics(List.of(topic)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) { // another relay made it first
        throw new TxboxException("cannot create the progress topic " + name + " (the relay needs the Kafka ACL"
            + " CREATE on it, or create it yourself: compacted, " + buckets + " partitions): " + e.getCause(), e);
      }
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

  /** The record that keeps {@code checkpoint} as {@code bucket}'s, to send inside the round's transaction. */
  public ProducerRecord<byte[], byte[]> record(int bucket, Checkpoint checkpoint, String writer) {
    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(name, bucket, utf8(Integer.toString(bucket)),
        utf8("1:" + Long.toUnsignedString(checkpoint.txId()) + ":" + checkpoint.position()));
    r.headers().add(WRITER_HEADER, utf8(writer));
    if (outboxId != null) {
      r.headers().add(OUTBOX_HEADER, utf8(outboxId));
    }
    return r;
  }

  /**
   * The last committed checkpoint of each of {@code buckets} that has one. Reads each partition up
   * to its last stable offset, from near its end first and further back only where that held none.
   */
  public synchronized Map<Integer, Checkpoint> read(Collection<Integer> buckets) {
    Map<Integer, Checkpoint> found = new TreeMap<>();
    List<TopicPartition> left = new ArrayList<>();
    for (int b : buckets) {
      left.add(new TopicPartition(name, b));
    }
    long window = FIRST_WINDOW;
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!left.isEmpty()) {
      consumer.assign(left);
      Map<TopicPartition, Long> begin = consumer.beginningOffsets(left, timeout);
      Map<TopicPartition, Long> end = settled(left, deadline);
      Map<TopicPartition, Long> from = new HashMap<>();
      for (TopicPartition tp : left) {
        from.put(tp, Math.max(begin.get(tp), end.get(tp) - window));
        consumer.seek(tp, from.get(tp));
      }
      Map<TopicPartition, ConsumerRecord<byte[], byte[]>> last = readUpTo(end, deadline);
      List<TopicPartition> again = new ArrayList<>();
      for (TopicPartition tp : left) {
        ConsumerRecord<byte[], byte[]> r = last.get(tp);
        if (r != null) {
          found.put(tp.partition(), parse(r));
        } else if (from.get(tp) > begin.get(tp)) {
          again.add(tp); // only aborted rounds near the end: look further back
        }
      }
      left = again;
      window *= 16;
    }
    consumer.assign(List.of());
    return found;
  }

  /**
   * The last stable offsets of {@code partitions}, once no transaction is open on them: a round's
   * commit returns before its markers are written, and only this relay writes these partitions
   * now (an earlier owner was fenced, which aborts its open transaction), so every transaction on
   * them is about to be decided and must be, before the checkpoint is read.
   */
  private Map<TopicPartition, Long> settled(List<TopicPartition> partitions, long deadline) {
    while (true) {
      Map<TopicPartition, Long> stable = consumer.endOffsets(partitions, timeout);
      Map<TopicPartition, Long> high = watermarks.endOffsets(partitions, timeout);
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

  private Map<TopicPartition, ConsumerRecord<byte[], byte[]>> readUpTo(Map<TopicPartition, Long> end, long deadline) {
    Map<TopicPartition, ConsumerRecord<byte[], byte[]>> last = new HashMap<>();
    Set<TopicPartition> reading = new HashSet<>(end.keySet());
    reading.removeIf(tp -> consumer.position(tp) >= end.get(tp));
    while (!reading.isEmpty()) {
      if (System.nanoTime() - deadline > 0) {
        throw new TxboxException("could not read the progress topic " + name + " to its end within " + timeout);
      }
      for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
        if (r.offset() < end.get(tp)) {
          last.put(tp, r);
        }
      }
      reading.removeIf(tp -> consumer.position(tp) >= end.get(tp));
    }
    return last;
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
