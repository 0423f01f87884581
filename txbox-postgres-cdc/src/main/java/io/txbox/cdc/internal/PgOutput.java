package io.txbox.cdc.internal;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Decodes the messages of PostgreSQL's {@code pgoutput} plugin, protocol version 1, that the relay
 * needs: transaction begin and commit, logical (WAL) messages, relations and inserts. Everything
 * else (updates, deletes, truncates, types, origins) comes back as {@link Other}.
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

  /** A table's name and columns, sent before its first change in a session. */
  public record Relation(int id, String namespace, String name, List<String> columns) implements Decoded {}

  /** A new row: each column's value as text, or {@code null}. */
  public record Insert(int relationId, List<String> values) implements Decoded {}

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
    List<String> columns = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      in.get(); // flags
      columns.add(cString(in));
      in.getInt(); // type oid
      in.getInt(); // type modifier
    }
    return new Relation(id, namespace, name, columns);
  }

  private static List<String> tuple(ByteBuffer in) {
    int count = in.getShort();
    List<String> values = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      char kind = (char) in.get();
      if (kind == 't') {
        byte[] bytes = new byte[in.getInt()];
        in.get(bytes);
        values.add(new String(bytes, StandardCharsets.UTF_8));
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

  private static Instant instant(long postgresMicros) {
    long micros = postgresMicros + POSTGRES_EPOCH_MICROS;
    return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000L);
  }
}
