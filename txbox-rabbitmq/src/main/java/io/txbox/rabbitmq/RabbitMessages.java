package io.txbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Delivery;
import io.txbox.Message;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Date;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * txbox's wire format on RabbitMQ, for publishers and consumers that are not txbox: writes a
 * {@link Message} as AMQP properties and reads it back: the id is {@code message_id},
 * the type {@code type}, the content type {@code content_type}; version, key and creation time
 * travel in headers, next to the message's own.
 *
 * <pre>{@code
 * channel.basicPublish(exchange, message.key(), RabbitMessages.properties(message), message.payload());
 * Message received = RabbitMessages.toMessage(delivery);
 * }</pre>
 */
public final class RabbitMessages {
  public static final String VERSION = "txbox-version";
  public static final String KEY = "txbox-key";
  public static final String CREATED_AT = "txbox-created-at";
  private static final Set<String> TXBOX_HEADERS = Set.of(VERSION, KEY, CREATED_AT);

  private RabbitMessages() {}

  /** Persistent (delivery mode 2) properties for {@code m}. */
  public static AMQP.BasicProperties properties(Message m) {
    Map<String, Object> headers = new HashMap<>(m.headers());
    headers.put(VERSION, Integer.toString(m.version()));
    headers.put(CREATED_AT, m.createdAt().toString());
    if (m.key() != null) {
      headers.put(KEY, m.key());
    }
    return new AMQP.BasicProperties.Builder()
        .deliveryMode(2)
        .messageId(m.id().toString())
        .type(m.type())
        .contentType(m.contentType())
        .timestamp(Date.from(m.createdAt()))
        .appId("txbox")
        .headers(headers)
        .build();
  }

  /**
   * The message of a delivery. One from another publisher gets what it lacks; without a {@code
   * message_id}, its id is derived from its routing and content, so an identical resend is still
   * a duplicate (and two identical messages are one).
   *
   * @throws IllegalArgumentException when a txbox header is malformed; no retry can fix that
   */
  public static Message toMessage(Delivery delivery) {
    AMQP.BasicProperties p = delivery.getProperties();
    Map<String, String> headers = new LinkedHashMap<>();
    Map<String, Object> raw = p.getHeaders() == null ? Map.of() : p.getHeaders();
    raw.forEach((name, value) -> {
      if (value != null && !TXBOX_HEADERS.contains(name)) {
        headers.put(name, value.toString());
      }
    });
    String exchange = delivery.getEnvelope().getExchange();
    String version = text(raw.get(VERSION));
    return new Message(
        id(delivery, p.getMessageId()),
        p.getType() != null ? p.getType() : exchange.isEmpty() ? delivery.getEnvelope().getRoutingKey() : exchange,
        version != null ? parseVersion(version) : 1,
        text(raw.get(KEY)),
        exchange.isEmpty() ? delivery.getEnvelope().getRoutingKey() : exchange,
        delivery.getBody() == null ? new byte[0] : delivery.getBody(),
        p.getContentType() != null ? p.getContentType() : Message.DEFAULT_CONTENT_TYPE,
        headers,
        createdAt(text(raw.get(CREATED_AT)), p.getTimestamp()),
        null);
  }

  private static UUID id(Delivery delivery, String messageId) {
    if (messageId != null) {
      try {
        return UUID.fromString(messageId);
      } catch (IllegalArgumentException e) {
        return UUID.nameUUIDFromBytes(("amqp-message-id/" + messageId).getBytes(StandardCharsets.UTF_8));
      }
    }
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      sha.update((delivery.getEnvelope().getExchange() + "/" + delivery.getEnvelope().getRoutingKey() + "/"
          + delivery.getProperties()).getBytes(StandardCharsets.UTF_8));
      sha.update(delivery.getBody() == null ? new byte[0] : delivery.getBody());
      return UUID.nameUUIDFromBytes(sha.digest());
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
    }
  }

  private static String text(Object value) {
    return value == null ? null : value.toString();
  }

  private static int parseVersion(String version) {
    try {
      return Integer.parseInt(version);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("header " + VERSION + " must be a whole number, was '" + version + "'");
    }
  }

  private static Instant createdAt(String value, Date timestamp) {
    if (value == null) {
      return timestamp != null ? timestamp.toInstant() : Instant.EPOCH;
    }
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("header " + CREATED_AT + " must be an ISO-8601 instant, was '" + value + "'");
    }
  }
}
