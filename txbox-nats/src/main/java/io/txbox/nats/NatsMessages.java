package io.txbox.nats;

import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsJetStreamMetaData;
import io.txbox.Message;
import io.txbox.spi.support.FormFields;
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
 * publishers and consumers that are not txbox (a reference client, another language).
 *
 * <ul>
 *   <li>{@value #ID}: the message id, on which JetStream deduplicates.
 *   <li>{@value #METADATA}: the rest of txbox's metadata in one header, form-encoded: {@code
 *       type}, {@code version}, {@code key} (absent for none), {@code content-type} and {@code
 *       created-at} (ISO-8601), each value percent-encoded as UTF-8 where it is not printable
 *       US-ASCII or is one of {@code % & = +}. One header: fewer bytes, and one value for
 *       other consumers to parse.
 *   <li>The message's own headers, one NATS header each; a value NATS cannot carry (not US-ASCII)
 *       travels as an RFC 2047 encoded word, {@code =?utf-8?b?<base64>?=}, and is decoded on receipt.
 * </ul>
 *
 * <p>txbox 0.1 wrote the metadata as separate headers ({@value #TYPE}, {@value #VERSION}, {@value
 * #CONTENT_TYPE}, {@value #KEY}, {@value #CREATED_AT}). Messages in that form are still read, and
 * {@link Format#SEPARATE_HEADERS} still writes it, for consumers not yet upgraded; both go in the
 * release after next.
 *
 * <pre>{@code
 * connection.publish(subject, NatsMessages.headers(message), message.payload());
 * Message received = NatsMessages.toMessage(natsMessage);
 * }</pre>
 */
public final class NatsMessages {
  /** The header JetStream deduplicates on: the message id. */
  public static final String ID = "Nats-Msg-Id";
  /** The header with txbox's metadata, form-encoded. */
  public static final String METADATA = "txbox";
  /** txbox 0.1's header of the type; read, and written by {@link Format#SEPARATE_HEADERS}. */
  public static final String TYPE = "txbox-type";
  /** txbox 0.1's header of the version; read, and written by {@link Format#SEPARATE_HEADERS}. */
  public static final String VERSION = "txbox-version";
  /** txbox 0.1's header of the content type; read, and written by {@link Format#SEPARATE_HEADERS}. */
  public static final String CONTENT_TYPE = "content-type";
  /** txbox 0.1's header of the key; read, and written by {@link Format#SEPARATE_HEADERS}. */
  public static final String KEY = "txbox-key";
  /** txbox 0.1's header of the creation time; read, and written by {@link Format#SEPARATE_HEADERS}. */
  public static final String CREATED_AT = "txbox-created-at";

  /** How txbox's metadata travels. */
  public enum Format {
    /** One {@value NatsMessages#METADATA} header, form-encoded: the default. */
    PACKED,
    /**
     * txbox 0.1's separate headers, for consumers that read them and are not upgraded yet.
     *
     * @deprecated five headers where one does; removed in the release after next
     */
    @Deprecated
    SEPARATE_HEADERS
  }

  private static final Set<String> TXBOX_HEADERS = Set.of(ID, METADATA, TYPE, VERSION, CONTENT_TYPE, KEY, CREATED_AT);
  private static final String ENCODED_PREFIX = "=?utf-8?b?";
  private static final String ENCODED_SUFFIX = "?=";
  private static final byte[] HEX = "0123456789ABCDEF".getBytes(StandardCharsets.US_ASCII);

  private NatsMessages() {}

  /** The headers of {@code m}, packed; a user header NATS or txbox cannot carry is a permanent failure. */
  public static Headers headers(Message m) throws PermanentPublishException {
    return headers(m, Format.PACKED);
  }

  /** The headers of {@code m} in {@code format}; a user header NATS or txbox cannot carry is a permanent failure. */
  @SuppressWarnings("deprecation")
  public static Headers headers(Message m, Format format) throws PermanentPublishException {
    Headers h = new Headers();
    h.put(ID, m.id().toString());
    if (format == Format.SEPARATE_HEADERS) {
      separate(m, h);
    } else {
      h.put(METADATA, packed(m));
    }
    for (Map.Entry<String, String> e : m.headers().entrySet()) {
      if (!isHeaderName(e.getKey()) || TXBOX_HEADERS.contains(e.getKey())) {
        throw new PermanentPublishException("message " + m.id() + ": header name '" + e.getKey()
            + "' cannot travel over NATS, whose header names are printable US-ASCII without ':', and must not be"
            + " one of txbox's own " + TXBOX_HEADERS + "; rename it");
      }
      h.put(e.getKey(), encode(e.getValue()));
    }
    return h;
  }

  private static void separate(Message m, Headers h) {
    h.put(TYPE, encode(m.type()));
    h.put(VERSION, Integer.toString(m.version()));
    h.put(CONTENT_TYPE, encode(m.contentType()));
    h.put(CREATED_AT, m.createdAt().toString());
    if (m.key() != null) {
      h.put(KEY, encode(m.key()));
    }
  }

  /** type, version, key, content type and creation time as one form-encoded value. */
  static String packed(Message m) {
    StringBuilder form = new StringBuilder(96);
    field(form, "type", m.type());
    field(form, "version", Integer.toString(m.version()));
    if (m.key() != null) {
      field(form, "key", m.key());
    }
    field(form, "content-type", m.contentType());
    field(form, "created-at", m.createdAt().toString());
    return form.toString();
  }

  private static void field(StringBuilder form, String name, String value) {
    if (form.length() > 0) {
      form.append('&');
    }
    form.append(name).append('=');
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c > 0x20 && c < 0x7F && c != '%' && c != '&' && c != '=' && c != '+') {
        form.append(c);
      } else {
        percentEncode(form, value, i);
        return;
      }
    }
  }

  /** The rest of {@code value} from {@code from}, percent-encoded where needed (the rare path). */
  private static void percentEncode(StringBuilder form, String value, int from) {
    for (byte b : value.substring(from).getBytes(StandardCharsets.UTF_8)) {
      int c = b & 0xFF;
      if (c > 0x20 && c < 0x7F && c != '%' && c != '&' && c != '=' && c != '+') {
        form.append((char) c);
      } else {
        form.append('%').append((char) HEX[c >> 4]).append((char) HEX[c & 0xF]);
      }
    }
  }

  /**
   * The message's key, without reading the rest of it: what a subscriber orders by.
   *
   * @throws IllegalArgumentException when txbox's metadata is malformed
   */
  public static String key(io.nats.client.Message nats) {
    Headers h = nats.getHeaders();
    String packed = header(h, METADATA);
    if (packed != null) {
      return unpack(packed).get("key");
    }
    return decodeOrNull(header(h, KEY));
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
    Map<String, String> meta = metadata(h);
    String version = meta.get("version");
    String type = meta.get("type");
    String contentType = meta.get("content-type");
    return new Message(
        id(nats, header(h, ID)),
        type != null ? type : nats.getSubject(),
        version != null ? parseVersion(version) : 1,
        meta.get("key"),
        nats.getSubject(),
        nats.getData() == null ? new byte[0] : nats.getData(),
        contentType != null ? contentType : Message.DEFAULT_CONTENT_TYPE,
        user,
        createdAt(nats, meta.get("created-at")),
        null);
  }

  /** txbox's metadata by the packed form's names, from the packed header or else the separate ones. */
  private static Map<String, String> metadata(Headers h) {
    String packed = header(h, METADATA);
    if (packed != null) {
      return unpack(packed);
    }
    Map<String, String> meta = new LinkedHashMap<>();
    putDecoded(meta, "type", header(h, TYPE));
    putDecoded(meta, "version", header(h, VERSION));
    putDecoded(meta, "key", header(h, KEY));
    putDecoded(meta, "content-type", header(h, CONTENT_TYPE));
    putDecoded(meta, "created-at", header(h, CREATED_AT));
    return meta;
  }

  private static void putDecoded(Map<String, String> meta, String name, String value) {
    if (value != null) {
      meta.put(name, decode(value));
    }
  }

  private static Map<String, String> unpack(String form) {
    return FormFields.decode(form, "header " + METADATA);
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
      throw new IllegalArgumentException("txbox's version of the message must be a whole number, was '" + version
          + "'");
    }
  }

  private static Instant createdAt(io.nats.client.Message nats, String value) {
    if (value == null) {
      return nats.metaData().timestamp().toInstant();
    }
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("txbox's created-at of the message must be an ISO-8601 instant, was '"
          + value + "'");
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
