package io.txbox.cdc.internal;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Decodes the messages of PostgreSQL's {@code pgoutput} plugin, protocol version 1, that the relay
 * needs: transaction begin and commit, logical (WAL) messages, relations and inserts. Everything
 * else (updates, deletes, truncates, types, origins) comes back as {@link Other}. An insert's
 * values stay bytes, in the format the server sent each in (text, or binary when the session asked
 * for it); {@link InsertedRow} reads the ones the relay needs.
 */
public final class PgOutput {
  /** Microseconds from the Unix epoch to PostgreSQL's, 2000-01-01. */
  private static final long POSTGRES_EPOCH_MICROS = 946_684_800_000_000L;

  private PgOutput() {}

  /** One decoded message. */
  public sealed interface Decoded permits Begin, Commit, WalMessage, Relation, Insert, Other {}

  /** A transaction starts; its changes follow, then its {@link Commit}. */
  public record Begin(long finalLsn, Instant commitTime, long xid) implements Decoded {}

  /** A transaction committed; {@code endLsn} is where a restart after it begins. */
  public record Commit(long commitLsn, long endLsn, Instant commitTime) implements Decoded {}

  /** A message written by {@code pg_logical_emit_message}. */
  public record WalMessage(boolean transactional, long lsn, String prefix, byte[] content) implements Decoded {}

  /**
   * A table's name and columns, sent before its first change in a session. {@code positions} maps
   * each column's name to its index, built once here rather than searched for in every row.
   */
  public record Relation(int id, String namespace, String name, List<Column> columns, Map<String, Integer> positions)
      implements Decoded {
    public Relation(int id, String namespace, String name, List<Column> columns) {
      this(id, namespace, name, List.copyOf(columns), positions(columns));
    }

    /** The index of column {@code name}, or -1 when the table has none (an older schema). */
    public int indexOf(String name) {
      return positions.getOrDefault(name, -1);
    }

    private static Map<String, Integer> positions(List<Column> columns) {
      Map<String, Integer> positions = new HashMap<>();
      for (int i = 0; i < columns.size(); i++) {
        positions.putIfAbsent(columns.get(i).name(), i);
      }
      return Map.copyOf(positions);
    }
  }

  /** A column of a {@link Relation}: its name and the oid of its type. */
  public record Column(String name, int typeOid) {}

  /** A new row: each column's value, or {@code null} for SQL null. */
  public record Insert(int relationId, List<Value> values) implements Decoded {}

  /** A column's value as the server sent it: its text, or its type's binary form. */
  public record Value(boolean binary, byte[] bytes) {}

  /** A message the relay does not need, by its type byte. */
  public record Other(char kind) implements Decoded {}

  /** Decodes one message from the replication stream. */
  public static Decoded decode(ByteBuffer in) {
    char kind = (char) in.get();
    return switch (kind) {
      case 'B' -> new Begin(in.getLong(), instant(in.getLong()), Integer.toUnsignedLong(in.getInt()));
      case 'C' -> {
        in.get(); // flags, unused
        yield new Commit(in.getLong(), in.getLong(), instant(in.getLong()));
      }
      case 'M' -> {
        boolean transactional = (in.get() & 1) == 1;
        long lsn = in.getLong();
        String prefix = cString(in);
        byte[] content = new byte[in.getInt()];
        in.get(content);
        yield new WalMessage(transactional, lsn, prefix, content);
      }
      case 'R' -> relation(in);
      case 'I' -> {
        int relationId = in.getInt();
        in.get(); // 'N': a new tuple follows
        yield new Insert(relationId, tuple(in));
      }
      default -> new Other(kind);
    };
  }

  private static Relation relation(ByteBuffer in) {
    int id = in.getInt();
    String namespace = cString(in);
    String name = cString(in);
    in.get(); // replica identity
    int count = in.getShort();
    List<Column> columns = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      in.get(); // flags
      String column = cString(in);
      columns.add(new Column(column, in.getInt()));
      in.getInt(); // type modifier
    }
    return new Relation(id, namespace, name, columns);
  }

  private static List<Value> tuple(ByteBuffer in) {
    int count = in.getShort();
    List<Value> values = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      char kind = (char) in.get();
      if (kind == 't' || kind == 'b') {
        byte[] bytes = new byte[in.getInt()];
        in.get(bytes);
        values.add(new Value(kind == 'b', bytes));
      } else {
        values.add(null); // 'n' null, 'u' unchanged TOAST value (never in an insert)
      }
    }
    return values;
  }

  private static String cString(ByteBuffer in) {
    int start = in.position();
    int end = start;
    while (in.get(end) != 0) {
      end++;
    }
    String value;
    if (in.hasArray()) {
      value = new String(in.array(), in.arrayOffset() + start, end - start, StandardCharsets.UTF_8);
    } else {
      byte[] bytes = new byte[end - start];
      in.get(start, bytes);
      value = new String(bytes, StandardCharsets.UTF_8);
    }
    in.position(end + 1);
    return value;
  }

  /** A {@code timestamptz} as PostgreSQL keeps it: microseconds since 2000-01-01 UTC. */
  static Instant instant(long postgresMicros) {
    long micros = postgresMicros + POSTGRES_EPOCH_MICROS;
    return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000L);
  }
}
