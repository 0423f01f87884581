package io.txbox.cdc.internal;

import io.txbox.postgres.OutboxRowText;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.StringJoiner;
import java.util.UUID;
import java.util.function.Function;

/**
 * An inserted outbox row as {@code pgoutput} sent it, read column by column as the message needs.
 * A value the server sent as text is parsed as PostgreSQL prints it ({@link OutboxRowText}); one
 * sent in binary is read by its column's type, which saves printing it on the server and parsing
 * it here. A column of a type the relay cannot read in binary is named in the error, and the row
 * is dead-lettered like any other unreadable event.
 *
 * <pre>{@code
 * Message message = OutboxRowText.message(new InsertedRow(relation, insert));
 * }</pre>
 */
final class InsertedRow implements OutboxRowText.Columns {
  private static final int BYTEA = 17;
  private static final int NAME = 19;
  private static final int INT8 = 20;
  private static final int INT2 = 21;
  private static final int INT4 = 23;
  private static final int TEXT = 25;
  private static final int JSON = 114;
  private static final int BPCHAR = 1042;
  private static final int VARCHAR = 1043;
  private static final int TIMESTAMP = 1114;
  private static final int TIMESTAMPTZ = 1184;
  private static final int UUID_OID = 2950;
  private static final int JSONB = 3802;
  /** The version byte that starts jsonb's binary form. */
  private static final int JSONB_VERSION = 1;

  private final PgOutput.Relation relation;
  private final List<PgOutput.Column> columns;
  private final List<PgOutput.Value> values;

  InsertedRow(PgOutput.Relation relation, PgOutput.Insert insert) {
    this.relation = relation;
    this.columns = relation.columns();
    this.values = insert.values();
  }

  @Override
  public String text(String name) {
    return textAt(relation.indexOf(name));
  }

  private String textAt(int i) {
    return read(i, text -> text, (type, bytes) -> switch (type) {
      case TEXT, VARCHAR, BPCHAR, NAME, JSON -> utf8(bytes, 0);
      case JSONB -> jsonb(columns.get(i).name(), bytes);
      case UUID_OID -> uuid(bytes).toString();
      default -> null;
    });
  }

  @Override
  public UUID uuid(String name) {
    return read(relation.indexOf(name), UUID::fromString, (type, bytes) -> type == UUID_OID ? uuid(bytes) : null);
  }

  @Override
  public Integer integer(String name) {
    return read(relation.indexOf(name), Integer::valueOf, (type, bytes) -> switch (type) {
      case INT2 -> (int) ByteBuffer.wrap(bytes).getShort();
      case INT4 -> ByteBuffer.wrap(bytes).getInt();
      case INT8 -> Math.toIntExact(ByteBuffer.wrap(bytes).getLong());
      default -> null;
    });
  }

  @Override
  public byte[] bytes(String name) {
    return read(relation.indexOf(name), OutboxRowText::bytea, (type, bytes) -> type == BYTEA ? bytes : null);
  }

  @Override
  public Instant instant(String name) {
    // a timestamp without zone counts as UTC, as the replication session's TimeZone does
    return read(relation.indexOf(name), OutboxRowText::timestamp,
        (type, bytes) -> type == TIMESTAMPTZ || type == TIMESTAMP ? instant(name, bytes) : null);
  }

  /** Reads a value sent in binary by its column's type; {@code null} for a type it does not read. */
  private interface Binary<T> {
    T read(int typeOid, byte[] bytes);
  }

  /** The value at {@code i}: {@code null} for SQL null, else parsed from its text or read from its binary form. */
  private <T> T read(int i, Function<String, T> fromText, Binary<T> fromBinary) {
    PgOutput.Value value = value(i);
    if (value == null) {
      return null;
    }
    if (!value.binary()) {
      return fromText.apply(utf8(value.bytes(), 0));
    }
    T read = fromBinary.read(columns.get(i).typeOid(), value.bytes());
    if (read == null) {
      throw new IllegalArgumentException(columns.get(i).name() + " has a column type (oid "
          + columns.get(i).typeOid() + ") the relay does not read in binary: give the outbox table txbox's column types");
    }
    return read;
  }

  private static UUID uuid(byte[] bytes) {
    ByteBuffer buffer = ByteBuffer.wrap(bytes);
    return new UUID(buffer.getLong(), buffer.getLong());
  }

  private static Instant instant(String name, byte[] bytes) {
    long micros = ByteBuffer.wrap(bytes).getLong();
    if (micros == Long.MAX_VALUE || micros == Long.MIN_VALUE) {
      throw new IllegalArgumentException(name + " is " + (micros > 0 ? "infinity" : "-infinity") + ", not a point in time");
    }
    return PgOutput.instant(micros);
  }

  /** The row as a reader can look at it in a dead letter: text as text, other binary values in hex. */
  byte[] describe() {
    StringJoiner row = new StringJoiner(", ", "{", "}");
    for (int i = 0; i < columns.size() && i < values.size(); i++) {
      row.add(columns.get(i).name() + "=" + shown(i));
    }
    return row.toString().getBytes(StandardCharsets.UTF_8);
  }

  private String shown(int i) {
    try {
      return String.valueOf(textAt(i));
    } catch (RuntimeException e) { // whatever this value is, a dead letter must still be written
      return "\\x" + HexFormat.of().formatHex(values.get(i).bytes());
    }
  }

  private PgOutput.Value value(int index) {
    return index < 0 || index >= values.size() ? null : values.get(index);
  }

  private static String jsonb(String name, byte[] bytes) {
    if (bytes.length == 0 || bytes[0] != JSONB_VERSION) {
      throw new IllegalArgumentException(name + " is jsonb in a binary version this relay does not know ("
          + (bytes.length == 0 ? "empty" : bytes[0]) + ")");
    }
    return utf8(bytes, 1);
  }

  private static String utf8(byte[] bytes, int from) {
    return new String(bytes, from, bytes.length - from, StandardCharsets.UTF_8);
  }
}
