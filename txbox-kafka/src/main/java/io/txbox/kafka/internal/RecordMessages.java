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
import org.apache.kafka.common.header.Header;

/** Turns a Kafka record back into the {@link Message} the relay published. */
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

  private static UUID derivedId(ConsumerRecord<byte[], byte[]> record) {
    String place = record.topic() + "/" + record.partition() + "/" + record.offset();
    return UUID.nameUUIDFromBytes(place.getBytes(StandardCharsets.UTF_8));
  }

  private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
    Header h = record.headers().lastHeader(name);
    return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }
}
