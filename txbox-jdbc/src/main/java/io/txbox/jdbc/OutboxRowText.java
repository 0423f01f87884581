package io.txbox.jdbc;

import io.txbox.Message;
import io.txbox.spi.support.JsonHeaders;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.temporal.ChronoField;
import java.util.HexFormat;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;

/**
 * Reads a row of the PostgreSQL outbox table given as text, column by column, the way PostgreSQL
 * prints it (logical decoding's {@code pgoutput}, {@code COPY}): {@code bytea} in hex, {@code
 * timestamptz} in ISO style, {@code headers} as a JSON object of strings.
 *
 * <pre>{@code
 * Map<String, String> columns = ...; // "id" -> "0193...", "payload" -> "\\x7b7d", ...
 * Message message = OutboxRowText.message(columns::get);
 * }</pre>
 */
public final class OutboxRowText {
  private static final DateTimeFormatter TIMESTAMP = new DateTimeFormatterBuilder()
      .appendPattern("yyyy-MM-dd HH:mm:ss")
      .optionalStart().appendFraction(ChronoField.NANO_OF_SECOND, 0, 9, true).optionalEnd()
      .appendOffset("+HH:mm:ss", "+00")
      .toFormatter();

  private OutboxRowText() {}

  /**
   * The message in the row; {@code column} gives a column's text by name, {@code null} for SQL
   * null.
   *
   * @throws IllegalArgumentException naming the column that is not a valid message field
   */
  public static Message message(Function<String, String> column) {
    String id = column.apply("id");
    try {
      String version = column.apply("version");
      String contentType = column.apply("content_type");
      String availableAt = column.apply("available_at");
      return new Message(
          UUID.fromString(required(column, "id")),
          column.apply("type"),
          version == null ? 1 : Integer.parseInt(version),
          column.apply("key"),
          column.apply("destination"),
          bytea(required(column, "payload")),
          contentType == null ? Message.DEFAULT_CONTENT_TYPE : contentType,
          headers(column.apply("headers")),
          timestamp(required(column, "created_at")),
          availableAt == null ? null : timestamp(availableAt));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("event " + id + ": " + e.getMessage(), e);
    }
  }

  /**
   * The {@code headers} column as PostgreSQL prints it, a JSON object: string values unescaped,
   * any other value kept as its JSON text; empty for {@code null} or {@code {}}.
   *
   * @throws IllegalArgumentException when the text is not a JSON object
   */
  public static Map<String, String> headers(String json) {
    return JsonHeaders.parse(json);
  }

  /** A {@code timestamptz} as PostgreSQL prints it in ISO style, e.g. {@code 2026-11-24 10:00:00.5+01}. */
  public static Instant timestamp(String text) {
    return OffsetDateTime.parse(text, TIMESTAMP).toInstant();
  }

  /** A {@code bytea} as PostgreSQL prints it in hex, e.g. {@code \x7b7d}. */
  public static byte[] bytea(String text) {
    if (!text.startsWith("\\x")) {
      throw new IllegalArgumentException("payload is not in bytea's hex output (bytea_output = hex)");
    }
    return HexFormat.of().parseHex(text, 2, text.length());
  }

  private static String required(Function<String, String> column, String name) {
    String value = column.apply(name);
    if (value == null) {
      throw new IllegalArgumentException(name + " must not be null");
    }
    return value;
  }
}
