package io.txbox.sqs;

import io.txbox.Message;
import io.txbox.spi.support.FormFields;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;

/**
 * txbox's wire format on Amazon SQS, for publishers and consumers that are not txbox.
 *
 * <ul>
 *   <li>The body is the payload as text when it is UTF-8 that SQS accepts in a body (JSON, say),
 *       else its Base64.
 *   <li>One String attribute, {@value #METADATA}, holds txbox's metadata form-encoded: {@code id},
 *       {@code type}, {@code version}, {@code key}, {@code content-type}, {@code created-at} and
 *       {@code body} ({@code text} or {@code base64}). One attribute, so that nine of SQS's ten are
 *       left for the message's own headers, one String attribute each.
 *   <li>On a FIFO queue the message group is the key (a key SQS does not accept as a group id, by
 *       its characters or length, is replaced by its SHA-256; a message without a key is a group
 *       of its own) and the deduplication id is the event id, so SQS drops a resend within its
 *       five-minute window.
 * </ul>
 *
 * <pre>{@code
 * SqsMessages.Encoded e = SqsMessages.encode(message, true);
 * sqs.sendMessage(b -> b.queueUrl(url).messageBody(e.body()).messageAttributes(e.attributes())
 *     .messageGroupId(e.groupId()).messageDeduplicationId(e.deduplicationId()));
 * Message received = SqsMessages.toMessage(sqsMessage, "orders.fifo");
 * }</pre>
 */
public final class SqsMessages {
  /** The attribute with txbox's metadata. */
  public static final String METADATA = "txbox";
  /** SQS's most message attributes per message. */
  public static final int MAX_ATTRIBUTES = 10;
  /** Most headers a message may have on SQS: the attributes that {@value #METADATA} leaves. */
  public static final int MAX_HEADERS = MAX_ATTRIBUTES - 1;
  private static final int MAX_GROUP_ID_LENGTH = 128;
  private static final Pattern GROUP_ID = Pattern.compile("[\\x21-\\x7E]{1," + MAX_GROUP_ID_LENGTH + "}");
  private static final Pattern ATTRIBUTE_NAME = Pattern.compile("[A-Za-z0-9_.-]{1,256}");
  private static final String STRING = "String";

  private SqsMessages() {}

  /**
   * A message as SQS takes it.
   *
   * @param groupId the FIFO message group, null for a standard queue
   * @param deduplicationId the FIFO deduplication id, null for a standard queue
   */
  public record Encoded(String body, Map<String, MessageAttributeValue> attributes, String groupId,
      String deduplicationId) {

    /** What SQS counts against its message size limit: the body and each attribute's name, type and value. */
    public int size() {
      int size = utf8Length(body);
      for (Map.Entry<String, MessageAttributeValue> a : attributes.entrySet()) {
        size += utf8Length(a.getKey()) + utf8Length(a.getValue().dataType()) + utf8Length(a.getValue().stringValue());
      }
      return size;
    }
  }

  /**
   * Encodes {@code m} for a FIFO or a standard queue.
   *
   * @throws IllegalArgumentException when a header cannot travel as an SQS attribute (too many,
   *     a name or value SQS refuses); the message names the header and the limit
   */
  public static Encoded encode(Message m, boolean fifo) {
    if (m.headers().size() > MAX_HEADERS) {
      throw new IllegalArgumentException("message " + m.id() + " has " + m.headers().size() + " headers; SQS carries"
          + " at most " + MAX_ATTRIBUTES + " message attributes, and txbox's metadata takes one: at most "
          + MAX_HEADERS + " headers");
    }
    Map<String, MessageAttributeValue> attributes = new LinkedHashMap<>();
    m.headers().forEach((name, value) -> attributes.put(checkedName(m, name), text(checkedValue(m, name, value))));
    Text body = Text.of(m.payload());
    attributes.put(METADATA, text(metadata(m, body)));
    String groupId = fifo ? groupId(m) : null;
    String deduplicationId = fifo ? m.id().toString() : null;
    return new Encoded(body.body(), attributes, groupId, deduplicationId);
  }

  /**
   * The message SQS delivered. One from another publisher (no {@value #METADATA} attribute) gets
   * what it lacks: its id from the FIFO deduplication id, else the SQS message id (so a redelivery
   * is a duplicate); the queue as type and destination; the message group as key; the body's UTF-8
   * as payload; its String attributes as headers.
   *
   * @throws IllegalArgumentException when txbox's metadata is malformed; no retry can fix that
   */
  public static Message toMessage(software.amazon.awssdk.services.sqs.model.Message received, String queue) {
    Map<String, String> headers = new LinkedHashMap<>();
    received.messageAttributes().forEach((name, value) -> {
      if (!name.equals(METADATA) && value.stringValue() != null) {
        headers.put(name, value.stringValue());
      }
    });
    MessageAttributeValue metadata = received.messageAttributes().get(METADATA);
    if (metadata == null || metadata.stringValue() == null) {
      return foreign(received, queue, headers);
    }
    Map<String, String> meta = FormFields.decode(metadata.stringValue(), "attribute " + METADATA);
    String body = received.body() == null ? "" : received.body();
    return new Message(
        uuid(required(meta, "id")),
        required(meta, "type"),
        version(meta.getOrDefault("version", "1")),
        meta.get("key"),
        queue,
        payload(body, meta.getOrDefault("body", "text")),
        meta.getOrDefault("content-type", Message.DEFAULT_CONTENT_TYPE),
        headers,
        instant(meta.get("created-at")),
        null);
  }

  private static Message foreign(software.amazon.awssdk.services.sqs.model.Message received, String queue,
      Map<String, String> headers) {
    Map<MessageSystemAttributeName, String> system = received.attributes();
    String deduplication = system.get(MessageSystemAttributeName.MESSAGE_DEDUPLICATION_ID);
    String sent = system.get(MessageSystemAttributeName.SENT_TIMESTAMP);
    String body = received.body() == null ? "" : received.body();
    return new Message(
        UUID.nameUUIDFromBytes(("sqs/" + queue + "/" + (deduplication != null ? deduplication : received.messageId()))
            .getBytes(StandardCharsets.UTF_8)),
        queue, 1, system.get(MessageSystemAttributeName.MESSAGE_GROUP_ID), queue,
        body.getBytes(StandardCharsets.UTF_8), Message.DEFAULT_CONTENT_TYPE, headers,
        sent != null ? Instant.ofEpochMilli(Long.parseLong(sent)) : Instant.EPOCH, null);
  }

  /** The message group of {@code m} on a FIFO queue. */
  static String groupId(Message m) {
    if (m.key() == null) {
      return m.id().toString();
    }
    return GROUP_ID.matcher(m.key()).matches() ? m.key() : "txbox-sha256-" + sha256(m.key());
  }

  private static String metadata(Message m, Text body) {
    Map<String, String> meta = new LinkedHashMap<>();
    meta.put("id", m.id().toString());
    meta.put("type", m.type());
    meta.put("version", Integer.toString(m.version()));
    if (m.key() != null) {
      meta.put("key", m.key());
    }
    meta.put("content-type", m.contentType());
    meta.put("created-at", m.createdAt().toString());
    meta.put("body", body.encoding());
    StringBuilder form = new StringBuilder();
    meta.forEach((name, value) -> form.append(form.length() == 0 ? "" : "&").append(name).append('=')
        .append(URLEncoder.encode(value, StandardCharsets.UTF_8)));
    return form.toString();
  }

  private static String checkedName(Message m, String name) {
    String lower = name.toLowerCase(java.util.Locale.ROOT);
    if (!ATTRIBUTE_NAME.matcher(name).matches() || name.startsWith(".") || name.endsWith(".") || name.contains("..")
        || lower.startsWith("aws.") || lower.startsWith("amazon.") || name.equals(METADATA)) {
      throw new IllegalArgumentException("message " + m.id() + ": header '" + name + "' cannot be an SQS message"
          + " attribute name (1 to 256 of A-Z a-z 0-9 _ - ., no leading, trailing or double '.', not starting with"
          + " AWS. or Amazon., not '" + METADATA + "')");
    }
    return name;
  }

  private static String checkedValue(Message m, String name, String value) {
    if (value.isEmpty() || !Text.acceptedBySqs(value)) {
      throw new IllegalArgumentException("message " + m.id() + ": header '" + name + "' has a value SQS refuses in"
          + " an attribute: it must be non-empty text of XML characters (no control characters but tab, CR, LF)");
    }
    return value;
  }

  private static MessageAttributeValue text(String value) {
    return MessageAttributeValue.builder().dataType(STRING).stringValue(value).build();
  }

  private static String required(Map<String, String> meta, String name) {
    String value = meta.get(name);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException("attribute " + METADATA + " lacks " + name);
    }
    return value;
  }

  private static UUID uuid(String id) {
    try {
      return UUID.fromString(id);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("attribute " + METADATA + ": id must be a UUID, was '" + id + "'");
    }
  }

  private static int version(String version) {
    try {
      return Integer.parseInt(version);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("attribute " + METADATA + ": version must be a whole number, was '"
          + version + "'");
    }
  }

  private static Instant instant(String value) {
    if (value == null) {
      return Instant.EPOCH;
    }
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("attribute " + METADATA + ": created-at must be an ISO-8601 instant, was '"
          + value + "'");
    }
  }

  private static byte[] payload(String body, String encoding) {
    return switch (encoding) {
      case "text" -> body.getBytes(StandardCharsets.UTF_8);
      case "base64" -> base64(body);
      case "empty" -> new byte[0];
      default -> throw new IllegalArgumentException("attribute " + METADATA + ": body must be text, base64 or empty,"
          + " was '" + encoding + "'");
    };
  }

  private static byte[] base64(String body) {
    try {
      return Base64.getDecoder().decode(body);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("the body is marked base64 but is not: " + e.getMessage());
    }
  }

  private static String sha256(String key) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
    }
  }

  private static int utf8Length(String s) {
    return s == null ? 0 : s.getBytes(StandardCharsets.UTF_8).length;
  }

  /** A payload as an SQS body: its text when SQS takes it as is, else Base64; SQS refuses an empty body. */
  private record Text(String body, String encoding) {
    static Text of(byte[] payload) {
      if (payload.length == 0) {
        return new Text(" ", "empty");
      }
      try {
        String text = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
            .decode(ByteBuffer.wrap(payload)).toString();
        if (acceptedBySqs(text) && text.indexOf('\r') < 0) { // CR could be normalised on the way
          return new Text(text, "text");
        }
      } catch (CharacterCodingException e) {
        // not UTF-8: Base64 below
      }
      return new Text(Base64.getEncoder().encodeToString(payload), "base64");
    }

    /** The characters SQS allows in a body or attribute (XML's, without the control characters). */
    static boolean acceptedBySqs(String text) {
      return text.codePoints().allMatch(c -> c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF)
          || (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF));
    }
  }
}
