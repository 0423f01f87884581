package io.txbox.kafka;

import io.txbox.Message;
import io.txbox.kafka.internal.RecordMessages;
import io.txbox.spi.UnreadableMessageException;
import io.txbox.spi.support.DeliveryLoop;
import io.txbox.spi.support.IntakeBatches;
import io.txbox.spi.support.LoopGuard;
import io.txbox.spi.support.Retries;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Kafka consumer of a {@link KafkaSubscriber}'s group and its thread. Members share nothing but
 * the subscriber's counters and intake, so partitions held by different members are handled in
 * parallel.
 */
final class GroupMember {
  private static final Logger log = LoggerFactory.getLogger(KafkaSubscriber.class);

  /**
   * What the members of one subscriber share.
   *
   * @param loop the subscriber's delivery loop: intake, retries, counters, and whether it is closing
   */
  record Shared(String consumerName, List<String> topics, DeliveryLoop loop) {}

  private final Shared shared;
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final Thread thread;
  private final Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();
  private final Map<TopicPartition, Retries.Attempts> failures = new HashMap<>();
  private final Map<TopicPartition, Instant> pausedUntil = new HashMap<>();
  private final LoopGuard guard;
  private final DeliveryLoop loop;

  GroupMember(Shared shared, Map<String, Object> config, String name) {
    this.shared = shared;
    this.consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    this.thread = new Thread(this::consume, name);
    this.guard = new LoopGuard(name + " polling " + shared.topics());
    this.loop = shared.loop();
  }

  void start() {
    thread.start();
  }

  /** Ends the poll in progress; with the subscriber closing, the member finishes and leaves. */
  void wakeUp() {
    consumer.wakeup();
  }

  void join(long millis) throws InterruptedException {
    thread.join(millis);
  }

  /** Whether its last poll failed. */
  boolean isTroubled() {
    return guard.isTroubled();
  }

  private void consume() {
    try {
      consumer.subscribe(shared.topics(), new CommitOnRevoke());
      while (loop.isOpen() && !Thread.currentThread().isInterrupted()) {
        if (!guard.attempt(this::pollOnce)) {
          recover();
        }
      }
    } finally {
      try {
        commitDone();
      } catch (RuntimeException e) {
        log.warn("subscriber {}: last offsets not committed, their records come again as duplicates: {}",
            shared.consumerName(), e.toString());
      }
      consumer.close(Duration.ofSeconds(5));
    }
  }

  /** One poll, its records, and their commit. */
  private void pollOnce() {
    try {
      resumeDuePartitions();
      handle(consumer.poll(Duration.ofMillis(200)));
      commitDone();
    } catch (WakeupException e) {
      // close() woke the consumer up: the loop ends
    }
  }

  /**
   * After a failed step (a commit refused after a rebalance, the broker gone, a bug): what was
   * handled since the last commit stays uncommitted, and every partition goes back to its
   * committed offset, so no record the step may have passed over is skipped; the records that
   * come again are absorbed by the inbox.
   */
  private void recover() {
    done.clear();
    if (loop.closedWithin(DeliveryLoop.AFTER_FAILED_STEP)) {
      return; // closing: the next member starts at the committed offsets anyway
    }
    guard.attempt(() -> {
      try {
        consumer.committed(consumer.assignment()).forEach((partition, offset) -> {
          if (offset != null) {
            consumer.seek(partition, offset.offset());
          }
        });
      } catch (WakeupException e) {
        // close() woke the consumer up: the loop ends
      }
    });
  }

  private void handle(ConsumerRecords<byte[], byte[]> records) {
    for (TopicPartition partition : records.partitions()) {
      List<ConsumerRecord<byte[], byte[]>> received = records.records(partition);
      int next = 0;
      if (!failures.containsKey(partition)) { // one retrying a failed record takes it alone first
        IntakeBatches.Taken taken = loop.takeBatches(received, RecordMessages::toMessage,
            batch -> done(partition, batch.get(batch.size() - 1)));
        next = taken.count();
        if (taken.failure() != null) {
          ConsumerRecord<byte[], byte[]> record = received.get(next);
          if (!failed(partition, record, RecordMessages.toMessage(record), taken.failure())) {
            continue; // the partition waits for the retry
          }
          next++;
        }
      }
      for (ConsumerRecord<byte[], byte[]> record : received.subList(next, received.size())) {
        if (!loop.isOpen() || !handle(partition, record)) {
          break; // the rest of the partition comes again after the seek
        }
      }
    }
  }

  /** Handles one record; returns false when it failed and its partition must wait. */
  private boolean handle(TopicPartition partition, ConsumerRecord<byte[], byte[]> record) {
    Message message;
    try {
      message = RecordMessages.toMessage(record);
    } catch (IllegalArgumentException e) {
      return skip(partition, record, e);
    }
    try {
      loop.take(message);
      done(partition, record);
      return true;
    } catch (UnreadableMessageException e) {
      return skip(partition, record, e);
    } catch (Exception | Error e) {
      return failed(partition, record, message, e);
    }
  }

  /**
   * Counts a failed attempt at {@code record}: true when the policy gave up and it was
   * dead-lettered, so the partition goes on; false when the partition waits for its retry.
   */
  private boolean failed(TopicPartition partition, ConsumerRecord<byte[], byte[]> record, Message message,
      Throwable e) {
    Retries.Attempts attempts = failures.compute(partition,
        (p, a) -> a != null && a.isFor(message) ? a : loop.attemptsAt(message));
    Optional<Duration> wait = loop.failed(attempts, e, " at " + partition + "@" + record.offset());
    if (wait.isEmpty()) {
      done(partition, record);
      return true;
    }
    Duration delay = wait.get();
    consumer.seek(partition, record.offset());
    consumer.pause(List.of(partition));
    pausedUntil.put(partition, Instant.now().plus(delay));
    return false;
  }

  private void done(TopicPartition partition, ConsumerRecord<byte[], byte[]> record) {
    done.put(partition, new OffsetAndMetadata(record.offset() + 1));
    failures.remove(partition);
  }

  /**
   * No retry can make a malformed record readable; holding its partition forever would stop
   * every later record behind it.
   */
  private boolean skip(TopicPartition partition, ConsumerRecord<byte[], byte[]> record, RuntimeException e) {
    loop.counters().countRejection();
    log.error("subscriber {}: skipped the unreadable record at {}@{}: {}", shared.consumerName(), partition,
        record.offset(), e.getMessage());
    done.put(partition, new OffsetAndMetadata(record.offset() + 1));
    return true;
  }

  private void resumeDuePartitions() {
    Instant now = Instant.now();
    pausedUntil.entrySet().removeIf(e -> {
      if (now.isBefore(e.getValue())) {
        return false;
      }
      if (consumer.assignment().contains(e.getKey())) {
        consumer.resume(List.of(e.getKey()));
      }
      return true;
    });
  }

  private void commitDone() {
    if (!done.isEmpty()) {
      consumer.commitSync(new LinkedHashMap<>(done));
      done.clear();
    }
  }

  /** Commits what was handled before partitions move to another member of the group. */
  private final class CommitOnRevoke implements ConsumerRebalanceListener {
    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
      log.info("subscriber {}: partitions {} revoked", shared.consumerName(), partitions);
      commitDone();
      partitions.forEach(p -> {
        pausedUntil.remove(p);
        failures.remove(p);
      });
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
      // committed offsets say where to start
      log.info("subscriber {}: partitions {} assigned", shared.consumerName(), partitions);
    }
  }
}
