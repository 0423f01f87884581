package io.txbox.nats;

import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsJetStreamMetaData;
import io.txbox.Message;
import io.txbox.spi.PermanentPublishException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * txbox's wire format on NATS: writes a {@link Message} as NATS headers and reads it back, for
 * publishers and consumers that are not txbox (a reference client, another language). NATS header values are US-ASCII
 * without CR or LF, so any other value (a key or a user header in another script) travels as an
 * RFC 2047 encoded word, {@code =?utf-8?b?<base64>?=}, and is decoded on receipt.
 *
 * <pre>{@code
 * connection.publish(subject, NatsMessages.headers(message), message.payload());
 * Message received = NatsMessages.toMessage(natsMessage);
 * }</pre>
 */
public final class NatsMessages {
  /** The header JetStream deduplicates on: the message id. */
  public static final String ID = "Nats-Msg-Id";
  public static final String TYPE = "txbox-type";
  public static final String VERSION = "txbox-version";
  public static final String CONTENT_TYPE = "content-type";
  public static final String KEY = "txbox-key";
  public static final String CREATED_AT = "txbox-created-at";

  private static final Set<String> TXBOX_HEADERS = Set.of(ID, TYPE, VERSION, CONTENT_TYPE, KEY, CREATED_AT);
  private static final String ENCODED_PREFIX = "=?utf-8?b?";
  private static final String ENCODED_SUFFIX = "?=";

  private NatsMessages() {}

  /** The headers of {@code m}; a user header name NATS cannot carry is a permanent failure. */
  public static Headers headers(Message m) throws PermanentPublishException {
    Headers h = new Headers();
    h.put(ID, m.id().toString());
    h.put(TYPE, encode(m.type()));
    h.put(VERSION, Integer.toString(m.version()));
    h.put(CONTENT_TYPE, encode(m.contentType()));
    h.put(CREATED_AT, m.createdAt().toString());
    if (m.key() != null) {
      h.put(KEY, encode(m.key()));
    }
    for (Map.Entry<String, String> e : m.headers().entrySet()) {
      if (!isHeaderName(e.getKey())) {
        throw new PermanentPublishException("message " + m.id() + ": header name '" + e.getKey()
            + "' cannot travel over NATS, whose header names are printable US-ASCII without ':'; rename it");
      }
      h.put(e.getKey(), encode(e.getValue()));
    }
    return h;
  }

  /**
   * The message of a JetStream message. One written by something other than txbox gets what it
   * lacks: its {@code Nats-Msg-Id} (any text) or, without one, its stream and sequence become a
   * name-based id, the same on every redelivery, so the inbox still deduplicates it.
   *
   * @throws IllegalArgumentException when a txbox header is malformed; no retry can fix that
   */
  public static Message toMessage(io.nats.client.Message nats) {
    Headers h = nats.getHeaders();
    Map<String, String> user = new LinkedHashMap<>();
    if (h != null) {
      for (String name : h.keySet()) {
        if (!TXBOX_HEADERS.contains(name)) {
          user.put(name, decode(h.getLast(name)));
        }
      }
    }
    String version = header(h, VERSION);
    String type = header(h, TYPE);
    String contentType = header(h, CONTENT_TYPE);
    return new Message(
        id(nats, header(h, ID)),
        type != null ? decode(type) : nats.getSubject(),
        version != null ? parseVersion(version) : 1,
        decodeOrNull(header(h, KEY)),
        nats.getSubject(),
        nats.getData() == null ? new byte[0] : nats.getData(),
        contentType != null ? decode(contentType) : Message.DEFAULT_CONTENT_TYPE,
        user,
        createdAt(nats, header(h, CREATED_AT)),
        null);
  }

  private static UUID id(io.nats.client.Message nats, String msgId) {
    if (msgId != null) {
      try {
        return UUID.fromString(msgId);
      } catch (IllegalArgumentException e) {
        return UUID.nameUUIDFromBytes(("nats-msg-id/" + msgId).getBytes(StandardCharsets.UTF_8));
      }
    }
    NatsJetStreamMetaData meta = nats.metaData();
    String place = meta.getStream() + "/" + meta.streamSequence();
    return UUID.nameUUIDFromBytes(place.getBytes(StandardCharsets.UTF_8));
  }

  private static int parseVersion(String version) {
    try {
      return Integer.parseInt(version);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("header " + VERSION + " must be a whole number, was '" + version + "'");
    }
  }

  private static Instant createdAt(io.nats.client.Message nats, String value) {
    if (value == null) {
      return nats.metaData().timestamp().toInstant();
    }
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("header " + CREATED_AT + " must be an ISO-8601 instant, was '" + value + "'");
    }
  }

  private static String header(Headers h, String name) {
    return h == null ? null : h.getLast(name);
  }

  private static boolean isHeaderName(String name) {
    return name.chars().allMatch(c -> c >= 33 && c <= 126 && c != ':');
  }

  /** The value as is when NATS can carry it and it cannot be mistaken for an encoded word. */
  static String encode(String value) {
    boolean plain = value.chars().allMatch(c -> c < 128 && c != '\r' && c != '\n')
        && !value.startsWith(ENCODED_PREFIX);
    if (plain) {
      return value;
    }
    return ENCODED_PREFIX + Base64.getEncoder().encodeToString(value.getBytes(StandardCharsets.UTF_8)) + ENCODED_SUFFIX;
  }

  static String decode(String value) {
    if (value.startsWith(ENCODED_PREFIX) && value.endsWith(ENCODED_SUFFIX)) {
      String base64 = value.substring(ENCODED_PREFIX.length(), value.length() - ENCODED_SUFFIX.length());
      return new String(Base64.getDecoder().decode(base64), StandardCharsets.UTF_8);
    }
    return value;
  }

  private static String decodeOrNull(String value) {
    return value == null ? null : decode(value);
  }
}
