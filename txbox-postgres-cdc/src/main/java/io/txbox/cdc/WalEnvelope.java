package io.txbox.cdc;

import io.txbox.Message;
import io.txbox.postgres.OutboxRowText;
import java.io.ByteArrayOutputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * How an event travels as a PostgreSQL WAL message ({@code pg_logical_emit_message}): a compact,
 * versioned envelope that the {@link LogicalRelay} reads back into a {@link Message}.
 *
 * <p>Format 1, every integer big-endian, every text UTF-8 behind its int32 byte length (-1 for
 * null), in the forms PostgreSQL's {@code uuid_send}, {@code int4send} and {@code int8send} write:
 *
 * <pre>
 * byte      format (1)
 * byte[16]  id
 * text      destination, key, type
 * int32     version
 * text      content type
 * int32     header count, then the name and value texts of each header
 * int64     created at, microseconds since 1970-01-01 UTC
 * int64     available at, the same, or {@link Long#MIN_VALUE} for none
 * bytes     the payload: everything that is left
 * </pre>
 *
 * <p>Format 2 is the same but for the headers: one text, the JSON object PostgreSQL prints for a
 * {@code jsonb} value ({@code headers::text}), read as {@link OutboxRowText#headers} reads the outbox
 * table's column. SQL writers build it with the function {@code <prefix>emit(...)} that {@link
 * LogicalReplication#migrate()} creates: SQL expands a JSON object only in a subquery, which costs
 * PL/pgSQL more than the rest of the envelope together. A relay reads both formats and refuses a
 * newer one by dead-lettering the event with the format named, so that an old relay never guesses.
 *
 * <pre>{@code
 * byte[] envelope = WalEnvelope.encode(message);
 * Message same = WalEnvelope.decode(envelope);
 * }</pre>
 */
public final class WalEnvelope {
  /** The format this version writes, with headers as name and value texts. */
  public static final int FORMAT = 1;
  /** The format the SQL function writes, with headers as one JSON text; this version reads it too. */
  public static final int FORMAT_JSON_HEADERS = 2;
  private static final long NONE = Long.MIN_VALUE;

  private WalEnvelope() {}

  /** The envelope of {@code message}. */
  public static byte[] encode(Message message) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256 + message.payload().length);
    out.write(FORMAT);
    int64(out, message.id().getMostSignificantBits());
    int64(out, message.id().getLeastSignificantBits());
    text(out, message.destination());
    text(out, message.key());
    text(out, message.type());
    int32(out, message.version());
    text(out, message.contentType());
    int32(out, message.headers().size());
    message.headers().forEach((name, value) -> {
      text(out, name);
      text(out, value);
    });
    int64(out, micros(message.createdAt()));
    int64(out, message.availableAt() == null ? NONE : micros(message.availableAt()));
    out.writeBytes(message.payload());
    return out.toByteArray();
  }

  /**
   * The message in {@code envelope}.
   *
   * @throws IllegalArgumentException naming what is wrong: an unknown format, a truncated
   *     envelope, or a field that breaks the message rules
   */
  public static Message decode(byte[] envelope) {
    ByteBuffer in = ByteBuffer.wrap(envelope);
    try {
      int format = in.get() & 0xff;
      if (format != FORMAT && format != FORMAT_JSON_HEADERS) {
        throw new IllegalArgumentException("envelope format " + format + " is not one this relay reads ("
            + FORMAT + " or " + FORMAT_JSON_HEADERS + "); upgrade the relay, then retry the dead letter");
      }
      UUID id = new UUID(in.getLong(), in.getLong());
      String destination = text(in);
      String key = text(in);
      String type = text(in);
      int version = in.getInt();
      String contentType = text(in);
      Map<String, String> headers = format == FORMAT ? headers(in) : jsonHeaders(in);
      Instant createdAt = instant(in.getLong());
      long availableAt = in.getLong();
      byte[] payload = new byte[in.remaining()];
      in.get(payload);
      return new Message(id, type, version, key, destination, payload, contentType, headers, createdAt,
          availableAt == NONE ? null : instant(availableAt));
    } catch (BufferUnderflowException e) {
      throw new IllegalArgumentException("envelope of " + envelope.length + " bytes ends before its last field");
    } catch (RuntimeException e) {
      throw e instanceof IllegalArgumentException iae ? iae : new IllegalArgumentException(e.toString(), e);
    }
  }

  private static Map<String, String> headers(ByteBuffer in) {
    int headerCount = in.getInt();
    if (headerCount < 0 || headerCount > in.remaining() / 8) {
      throw new IllegalArgumentException("header count " + headerCount + " does not fit the envelope");
    }
    Map<String, String> headers = new LinkedHashMap<>();
    for (int i = 0; i < headerCount; i++) {
      headers.put(required(in, "header name"), required(in, "header value"));
    }
    return headers;
  }

  private static Map<String, String> jsonHeaders(ByteBuffer in) {
    return OutboxRowText.headers(required(in, "headers"));
  }

  private static void text(ByteArrayOutputStream out, String value) {
    if (value == null) {
      int32(out, -1);
      return;
    }
    byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
    int32(out, bytes.length);
    out.writeBytes(bytes);
  }

  private static long micros(Instant instant) {
    return Math.addExact(Math.multiplyExact(instant.getEpochSecond(), 1_000_000L), instant.getNano() / 1000);
  }

  private static Instant instant(long micros) {
    return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000L);
  }

  private static void int64(ByteArrayOutputStream out, long value) {
    int32(out, (int) (value >>> 32));
    int32(out, (int) value);
  }

  private static void int32(ByteArrayOutputStream out, int value) {
    out.write(value >>> 24);
    out.write(value >>> 16);
    out.write(value >>> 8);
    out.write(value);
  }

  private static String required(ByteBuffer in, String field) {
    String value = text(in);
    if (value == null) {
      throw new IllegalArgumentException(field + " is missing from the envelope");
    }
    return value;
  }

  private static String text(ByteBuffer in) {
    int length = in.getInt();
    if (length == -1) {
      return null;
    }
    if (length < 0 || length > in.remaining()) {
      throw new IllegalArgumentException("a text field of " + length + " bytes does not fit the envelope");
    }
    String value = new String(in.array(), in.position(), length, StandardCharsets.UTF_8);
    in.position(in.position() + length);
    return value;
  }
}
