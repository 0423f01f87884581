package io.txbox.cdc.internal;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The transactions exactly-once delivery has delivered from the stream that the slot's last
 * checkpoint in the database ({@link SlotCheckpoints.Mark}) does not cover yet, kept beside the
 * slot's place at the broker as a note. After a failover that lost the slot, the catch-up from the
 * table relays what the checkpoint does not cover; this says which of those transactions the
 * former primary's stream delivered already, so that they are passed, not sent again.
 *
 * <p>Kept as ranges of transaction ids (consecutive ids are the common case), each range pruned
 * once a checkpoint written later covers it; at most {@value #MAX_RANGES} ranges. Past that, new
 * transactions are not recorded and the note says it is incomplete until a checkpoint taken after
 * the last one unrecorded is written. The last transaction may be delivered in part: how many of
 * its rows is kept with it. Loop thread only.
 *
 * <p>A note reads {@code 1|<ranges>|<partial>|<complete>}: ranges as {@code a-b} or {@code a},
 * comma-separated; the partial transaction as {@code <id>:<rows>}, or empty; {@code c} when
 * complete, {@code i} when not.
 */
final class DeliveredPastMark {
  static final int MAX_RANGES = 10_000;

  /** Start of each range to its end, both included. */
  private final TreeMap<Long, Long> ranges = new TreeMap<>();
  private long partialXid;
  private long partialRows;
  /** When a transaction delivered was last left unrecorded, or {@code null}. */
  private Instant unrecordedSince;
  /** A nearby full transaction id: the stream reports 32 bits of each. */
  private long reference;

  /** What a note said: the transactions delivered, and how many rows of a transaction delivered in part. */
  record Note(TreeMap<Long, Long> ranges, long partialXid, long partialRows, boolean complete) {
    static final Note NONE = new Note(new TreeMap<>(), 0, 0, true);

    /** Whether every row of transaction {@code xid} was delivered. */
    boolean deliveredWhole(long xid) {
      return xid != partialXid && contains(ranges, xid);
    }
  }

  /** Starts from what the broker's note says; {@code reference} is a full transaction id of now. */
  void restore(String note, long reference) {
    Note n = parse(note);
    ranges.clear();
    ranges.putAll(n.ranges());
    partialXid = n.partialXid();
    partialRows = n.partialRows();
    unrecordedSince = n.complete() ? null : Instant.EPOCH; // until a checkpoint taken from now on is written
    this.reference = reference;
  }

  /** Records the events of {@code batch}, just committed at the broker, in commit order. */
  void delivered(List<PendingEvents.Entry> batch, Instant now) {
    for (PendingEvents.Entry e : batch) {
      if (e.xid() == 0) {
        continue; // a WAL message outside any transaction: no table holds it
      }
      long xid = widen(e.xid());
      if (!add(xid)) {
        unrecordedSince = now;
      }
      partialXid = e.place().events() < e.transactionSize() ? xid : 0;
      partialRows = partialXid == 0 ? 0 : e.rowsUpTo();
    }
  }

  /**
   * Forgets what {@code mark}, just written, covers: every id below its {@code deliveredBelow} but
   * those it saw still open.
   */
  void covered(SlotCheckpoints.Candidate mark) {
    long below = mark.deliveredBelow();
    TreeMap<Long, Long> kept = new TreeMap<>();
    ranges.forEach((start, end) -> {
      if (end >= below) {
        kept.put(Math.max(start, below), end);
      }
    });
    for (long open : mark.stillOpen()) {
      if (open < below && contains(ranges, open)) {
        kept.put(open, open);
      }
    }
    ranges.clear();
    ranges.putAll(kept);
    if (partialXid != 0 && !contains(ranges, partialXid)) {
      partialXid = 0;
      partialRows = 0;
    }
    if (unrecordedSince != null && mark.takenAt().isAfter(unrecordedSince)) {
      unrecordedSince = null;
    }
    reference = below;
  }

  /** What the note says now, as {@link #parse} would read it back. */
  Note asNote() {
    return new Note(new TreeMap<>(ranges), partialXid, partialRows, unrecordedSince == null);
  }

  /** The note to keep beside the place at the broker. */
  String note() {
    StringBuilder b = new StringBuilder("1|");
    String sep = "";
    for (Map.Entry<Long, Long> r : ranges.entrySet()) {
      b.append(sep).append(Long.toUnsignedString(r.getKey()));
      if (!r.getValue().equals(r.getKey())) {
        b.append('-').append(Long.toUnsignedString(r.getValue()));
      }
      sep = ",";
    }
    b.append('|');
    if (partialXid != 0) {
      b.append(Long.toUnsignedString(partialXid)).append(':').append(partialRows);
    }
    return b.append('|').append(unrecordedSince == null ? 'c' : 'i').toString();
  }

  /** Reads a note; {@link Note#NONE} for none. */
  static Note parse(String note) {
    if (note == null || note.isEmpty()) {
      return Note.NONE;
    }
    String[] parts = note.split("\\|", -1);
    if (parts.length != 4 || !parts[0].equals("1")) {
      throw new IllegalArgumentException("a note txbox did not write beside the slot's place (" + note.length()
          + " characters)");
    }
    TreeMap<Long, Long> ranges = new TreeMap<>();
    for (String r : parts[1].isEmpty() ? new String[0] : parts[1].split(",")) {
      int dash = r.indexOf('-');
      long start = Long.parseUnsignedLong(dash < 0 ? r : r.substring(0, dash));
      ranges.put(start, dash < 0 ? start : Long.parseUnsignedLong(r.substring(dash + 1)));
    }
    long partialXid = 0;
    long partialRows = 0;
    if (!parts[2].isEmpty()) {
      String[] p = parts[2].split(":");
      partialXid = Long.parseUnsignedLong(p[0]);
      partialRows = Long.parseLong(p[1]);
    }
    return new Note(ranges, partialXid, partialRows, parts[3].equals("c"));
  }

  /** The full id of a transaction the stream names by its 32 low bits, the one nearest the reference. */
  long widen(long xid) {
    return widen(reference, xid);
  }

  /** The full id whose 32 low bits are {@code xid}'s, the one nearest the full id {@code reference}. */
  static long widen(long reference, long xid) {
    long low = xid & 0xFFFF_FFFFL;
    long full = (reference & 0xFFFF_FFFF_0000_0000L) | low;
    if (full > reference + (1L << 31)) {
      full -= 1L << 32;
    } else if (full < reference - (1L << 31)) {
      full += 1L << 32;
    }
    return full;
  }

  private static boolean contains(TreeMap<Long, Long> ranges, long xid) {
    Map.Entry<Long, Long> r = ranges.floorEntry(xid);
    return r != null && r.getValue() >= xid;
  }

  /** Adds one id, joining neighbouring ranges; false when there is no room for another range. */
  private boolean add(long xid) {
    if (contains(ranges, xid)) {
      return true;
    }
    Map.Entry<Long, Long> before = ranges.floorEntry(xid);
    Long after = ranges.containsKey(xid + 1) ? xid + 1 : null;
    if (before != null && before.getValue() == xid - 1) {
      long end = after != null ? ranges.remove(after) : xid;
      ranges.put(before.getKey(), end);
      return true;
    }
    if (after != null) {
      ranges.put(xid, ranges.remove(after));
      return true;
    }
    if (ranges.size() >= MAX_RANGES) {
      return false;
    }
    ranges.put(xid, xid);
    return true;
  }
}
