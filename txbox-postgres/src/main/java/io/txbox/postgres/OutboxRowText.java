package io.txbox.postgres;

import io.txbox.Message;
import io.txbox.jdbc.spi.JsonHeaders;
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
 * timestamptz} in ISO style, {@code headers} as a JSON object of strings. {@link Columns} takes
 * a row already read by type (logical decoding's binary format), with the same rules.
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
    return message(new Columns() {
      @Override
      public String text(String name) {
        return column.apply(name);
      }

      @Override
      public UUID uuid(String name) {
        String text = column.apply(name);
        return text == null ? null : UUID.fromString(text);
      }

      @Override
      public Integer integer(String name) {
        String text = column.apply(name);
        return text == null ? null : Integer.valueOf(text);
      }

      @Override
      public byte[] bytes(String name) {
        String text = column.apply(name);
        return text == null ? null : bytea(text);
      }

      @Override
      public Instant instant(String name) {
        String text = column.apply(name);
        return text == null ? null : timestamp(text);
      }
    });
  }

  /**
   * The message in a row whose columns are already read by type, as logical decoding's binary
   * format gives them; the same rules as {@link #message(Function)}.
   *
   * @throws IllegalArgumentException naming the column that is not a valid message field
   */
  public static Message message(Columns row) {
    try {
      Integer version = row.integer("version");
      String contentType = row.text("content_type");
      return new Message(
          required(row.uuid("id"), "id"),
          row.text("type"),
          version == null ? 1 : version,
          row.text("key"),
          row.text("destination"),
          required(row.bytes("payload"), "payload"),
          contentType == null ? Message.DEFAULT_CONTENT_TYPE : contentType,
          headers(row.text("headers")),
          required(row.instant("created_at"), "created_at"),
          row.instant("available_at"));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("event " + idOrNull(row) + ": " + e.getMessage(), e);
    }
  }

  private static String idOrNull(Columns row) {
    try {
      return row.text("id");
    } catch (RuntimeException e) {
      return null;
    }
  }

  /**
   * An outbox row's columns by name, each read as the type the message needs; {@code null} for
   * SQL null.
   *
   * <pre>{@code
   * Message message = OutboxRowText.message(columns); // columns decoded from pgoutput's binary tuples
   * }</pre>
   */
  public interface Columns {
    /** A column as text: {@code id}, {@code type}, {@code key}, {@code headers} (JSON). */
    String text(String name);

    /** The {@code id} column. */
    UUID uuid(String name);

    /** The {@code version} column. */
    Integer integer(String name);

    /** The {@code payload} column. */
    byte[] bytes(String name);

    /** The {@code created_at} and {@code available_at} columns. */
    Instant instant(String name);
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

  private static <T> T required(T value, String name) {
    if (value == null) {
      throw new IllegalArgumentException(name + " must not be null");
    }
    return value;
  }
}
