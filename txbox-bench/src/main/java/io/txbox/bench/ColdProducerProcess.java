package io.txbox.bench;

import io.txbox.Message;
import io.txbox.kafka.KafkaPublisher;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The floor of a cold drain for any relay that publishes with kafka-clients: a JVM started for
 * it that only sends {@code N} records, the events a relay would send (key, payload and the four
 * headers txbox adds, built from memory), with txbox's producer settings, and never waits on
 * one: the producer batches and pipelines as it likes. It prints the lines {@link
 * LogicalRelayProcess} prints, timed the same way, from the start of {@code main}.
 * Arguments: bootstrap servers, topic, N.
 */
public final class ColdProducerProcess {
  private ColdProducerProcess() {}

  public static void main(String[] args) throws Exception {
    long startedAt = System.nanoTime();
    int count = Integer.parseInt(args[2]);
    Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0],
        ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true",
        ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5", ProducerConfig.LINGER_MS_CONFIG, "5",
        ProducerConfig.BATCH_SIZE_CONFIG, "262144");
    AtomicLong acknowledged = new AtomicLong();
    CountDownLatch done = new CountDownLatch(1);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer())) {
      for (int i = 0; i < count; i++) {
        producer.send(record(args[1], Events.orderPlaced(args[1], i)), (metadata, error) -> {
          if (error != null) {
            error.printStackTrace();
            System.exit(1);
          }
          long before = acknowledged.getAndIncrement();
          if (before == 0) {
            System.out.printf("first acknowledged in %d ms%n", (System.nanoTime() - startedAt) / 1_000_000);
          }
          if (before + 1 == count) {
            System.out.printf("drained %d in %d ms%n", count, (System.nanoTime() - startedAt) / 1_000_000);
            done.countDown();
          }
        });
      }
      done.await();
    }
  }

  /** The record txbox's KafkaPublisher sends for {@code m}. */
  private static ProducerRecord<byte[], byte[]> record(String topic, Message m) {
    RecordHeaders headers = new RecordHeaders();
    headers.add(KafkaPublisher.ID_HEADER, utf8(m.id().toString()));
    headers.add(KafkaPublisher.TYPE_HEADER, utf8(m.type()));
    headers.add(KafkaPublisher.VERSION_HEADER, utf8(Integer.toString(m.version())));
    headers.add(KafkaPublisher.CONTENT_TYPE_HEADER, utf8(m.contentType()));
    m.headers().forEach((name, value) -> headers.add(name, utf8(value)));
    return new ProducerRecord<>(topic, null, m.createdAt().toEpochMilli(), utf8(m.key()), m.payload(), headers);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
