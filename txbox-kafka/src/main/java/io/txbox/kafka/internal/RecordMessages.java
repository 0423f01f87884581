package io.txbox.kafka.internal;

import io.txbox.Message;
import io.txbox.kafka.KafkaPublisher;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.DefaultRecord;
import org.apache.kafka.common.record.DefaultRecordBatch;

/** Turns a {@link Message} into the Kafka record the relay publishes, and a record back into it. */
public final class RecordMessages {
  private static final Set<String> TXBOX_HEADERS = Set.of(KafkaPublisher.ID_HEADER, KafkaPublisher.TYPE_HEADER,
      KafkaPublisher.VERSION_HEADER, KafkaPublisher.CONTENT_TYPE_HEADER);

  private RecordMessages() {}

  /**
   * The message of a record. A record written by something other than txbox, without a
   * {@code txbox-id} header, gets an id derived from its topic, partition and offset: the same on
   * every redelivery, so the inbox still deduplicates it.
   */
  public static Message toMessage(ConsumerRecord<byte[], byte[]> record) {
    Map<String, String> headers = new LinkedHashMap<>();
    for (Header h : record.headers()) {
      if (h.value() != null && !TXBOX_HEADERS.contains(h.key())) {
        headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8));
      }
    }
    String id = header(record, KafkaPublisher.ID_HEADER);
    String type = header(record, KafkaPublisher.TYPE_HEADER);
    String version = header(record, KafkaPublisher.VERSION_HEADER);
    String contentType = header(record, KafkaPublisher.CONTENT_TYPE_HEADER);
    return new Message(
        id != null ? UUID.fromString(id) : derivedId(record),
        type != null ? type : record.topic(),
        version != null ? Integer.parseInt(version) : 1,
        record.key() == null ? null : new String(record.key(), StandardCharsets.UTF_8),
        record.topic(),
        record.value() == null ? new byte[0] : record.value(),
        contentType != null ? contentType : Message.DEFAULT_CONTENT_TYPE,
        headers,
        Instant.ofEpochMilli(record.timestamp()),
        null);
  }

  /**
   * The record of {@code m} on {@code topic}: the message key as the record key, the payload as the
   * value, the creation time as the timestamp, txbox's headers and then the message's own.
   */
  public static ProducerRecord<byte[], byte[]> toRecord(String topic, Message m) {
    RecordHeaders headers = new RecordHeaders();
    headers.add(KafkaPublisher.ID_HEADER, utf8(m.id().toString()));
    headers.add(KafkaPublisher.TYPE_HEADER, utf8(m.type()));
    headers.add(KafkaPublisher.VERSION_HEADER, utf8(Integer.toString(m.version())));
    headers.add(KafkaPublisher.CONTENT_TYPE_HEADER, utf8(m.contentType()));
    m.headers().forEach((name, value) -> headers.add(name, utf8(value)));
    byte[] key = m.key() == null ? null : utf8(m.key());
    return new ProducerRecord<>(topic, null, m.createdAt().toEpochMilli(), key, m.payload(), headers);
  }

  /** The size of {@code record} uncompressed, alone in a batch: what a topic's {@code max.message.bytes} limits. */
  public static int sizeAlone(ProducerRecord<byte[], byte[]> record) {
    return DefaultRecordBatch.RECORD_BATCH_OVERHEAD + DefaultRecord.sizeInBytes(0, 0L,
        record.key() == null ? 0 : record.key().length, record.value() == null ? 0 : record.value().length,
        record.headers().toArray());
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static UUID derivedId(ConsumerRecord<byte[], byte[]> record) {
    String place = record.topic() + "/" + record.partition() + "/" + record.offset();
    return UUID.nameUUIDFromBytes(place.getBytes(StandardCharsets.UTF_8));
  }

  private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
    Header h = record.headers().lastHeader(name);
    return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }
}
