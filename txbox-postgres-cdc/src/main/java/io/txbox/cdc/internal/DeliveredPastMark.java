package io.txbox.cdc.internal;

import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.TreeMap;

/**
 * The transactions exactly-once delivery has delivered from the stream that the slot's last
 * checkpoint in the database ({@link SlotCheckpoints.Mark}) does not cover yet, kept beside the
 * slot's place at the broker as a note. After a failover that lost the slot, the catch-up from the
 * table relays what the checkpoint does not cover; this says which of those transactions the
 * former primary's stream delivered already, so that they are passed, not sent again.
 *
 * <p>The last {@value #MAX_RECENT} transactions delivered are kept with where their commit record
 * ends: on PostgreSQL 15 and 16 the stream may deliver a commit the synchronous standby never got
 * (decoding does not wait for it; only the writer does, one commit per session), and the standby,
 * once promoted, gives that transaction's id to a new one. {@link Note#heldUpTo} keeps only what a
 * server that replayed the former primary's WAL up to a point holds. Older transactions are kept
 * as ranges of ids (consecutive ids are the common case), with the end of the latest commit among
 * them; each range is pruned once a checkpoint written later covers it; at most {@value
 * #MAX_RANGES} ranges. Past that, new transactions are not recorded and the note says it is
 * incomplete until a checkpoint taken after the last one unrecorded is written. The last
 * transaction may be delivered in part: how many of its rows is kept with it. Loop thread only.
 *
 * <p>A note reads {@code 3|<ranges>|<recent>|<ranges' last commit end>|<partial>|<complete>}:
 * ranges as {@code a-b} or {@code a}, comma-separated; recent transactions in delivery order,
 * comma-separated, each as {@code <id>@<commit end>} written as differences from the one before
 * (the first from 0) in base 36, the id's left out when it is 1 more; the partial transaction as
 * {@code <id>:<rows>}, or empty; {@code c} when complete, {@code i} when not. The note goes to
 * the broker with every batch, and differences keep it small: consecutive transactions of a few
 * rows take 4 or 5 characters each, where {@code <id>@<commit end>} in full took about 20.
 * Notes of version 2 wrote the recent transactions in full, in base 10; notes of version 1 (txbox
 * before 0.1.0's release) have no recent transactions and no commit ends: {@code
 * 1|<ranges>|<partial>|<complete>}. Both are still read.
 */
final class DeliveredPastMark {
  static final int MAX_RANGES = 10_000;
  /**
   * How many of the last transactions delivered are kept with their commit's end: more than the
   * sessions whose commit can wait for a standby at once, which {@code max_connections} bounds.
   */
  static final int MAX_RECENT = 4_096;

  /** Start of each range to its end, both included. */
  private final TreeMap<Long, Long> ranges = new TreeMap<>();
  /** The end of the latest commit folded into the ranges; 0 when unknown (a note of version 1). */
  private long rangesThrough;
  /** The last transactions delivered, in delivery order, each to the end of its commit record. */
  private final LinkedHashMap<Long, Long> recent = new LinkedHashMap<>();
  private long partialXid;
  private long partialRows;
  /** When a transaction delivered was last left unrecorded, or {@code null}. */
  private Instant unrecordedSince;
  /** A nearby full transaction id: the stream reports 32 bits of each. */
  private long reference;

  /**
   * What a note said: the transactions delivered, older ones as ranges (their latest commit ending
   * at {@code rangesThrough}) and recent ones each with the end of its commit, and how many rows
   * of a transaction delivered in part.
   */
  record Note(TreeMap<Long, Long> ranges, long rangesThrough, Map<Long, Long> recent, long partialXid,
      long partialRows, boolean complete) {
    static final Note NONE = new Note(new TreeMap<>(), 0, Map.of(), 0, 0, true);

    /** Whether every row of transaction {@code xid} was delivered. */
    boolean deliveredWhole(long xid) {
      return xid != partialXid && delivered(xid);
    }

    private boolean delivered(long xid) {
      return named(recent, ranges, xid);
    }

    /**
     * What of this a server holds that replayed the former primary's WAL up to {@code replayEnd}:
     * a transaction committed past it is not there, and its id may name a new one. Ranges whose
     * latest commit is past it are dropped whole, so their rows are sent again rather than lost.
     */
    Note heldUpTo(long replayEnd) {
      Map<Long, Long> held = new LinkedHashMap<>();
      recent.forEach((xid, end) -> {
        if (Long.compareUnsigned(end, replayEnd) <= 0) {
          held.put(xid, end);
        }
      });
      boolean rangesHeld = Long.compareUnsigned(rangesThrough, replayEnd) <= 0;
      TreeMap<Long, Long> heldRanges = rangesHeld ? ranges : new TreeMap<>();
      boolean partialHeld = named(held, heldRanges, partialXid);
      return new Note(heldRanges, rangesHeld ? rangesThrough : 0, held, partialHeld ? partialXid : 0,
          partialHeld ? partialRows : 0, complete);
    }
  }

  /** Starts from what the broker's note says; {@code reference} is a full transaction id of now. */
  void restore(String note, long reference) {
    Note n = parse(note);
    ranges.clear();
    ranges.putAll(n.ranges());
    rangesThrough = n.rangesThrough();
    recent.clear();
    recent.putAll(n.recent());
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
      recent.putIfAbsent(xid, e.place().endLsn());
      if (recent.size() > MAX_RECENT) {
        fold(now);
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
    recent.keySet().removeIf(xid -> xid < below && Arrays.stream(mark.stillOpen()).noneMatch(open -> open == xid));
    if (partialXid != 0 && !named(recent, ranges, partialXid)) {
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
    return new Note(new TreeMap<>(ranges), rangesThrough, new LinkedHashMap<>(recent), partialXid, partialRows,
        unrecordedSince == null);
  }

  /** The note to keep beside the place at the broker. */
  String note() {
    StringJoiner rangeList = new StringJoiner(",");
    ranges.forEach((start, end) -> rangeList.add(Long.toUnsignedString(start)
        + (end.equals(start) ? "" : "-" + Long.toUnsignedString(end))));
    String partial = partialXid == 0 ? "" : Long.toUnsignedString(partialXid) + ":" + partialRows;
    return String.join("|", "3", rangeList.toString(), recentAsDifferences(), Long.toUnsignedString(rangesThrough),
        partial, unrecordedSince == null ? "c" : "i");
  }

  /**
   * The recent transactions, each as its id's and its commit end's difference from the one before.
   * Differences wrap around as unsigned numbers do, so adding them up gives every value back.
   */
  private String recentAsDifferences() {
    StringJoiner list = new StringJoiner(",");
    long xid = 0;
    long end = 0;
    for (Map.Entry<Long, Long> e : recent.entrySet()) {
      long xidStep = e.getKey() - xid;
      list.add((xidStep == 1 ? "" : Long.toString(xidStep, 36)) + "@" + Long.toString(e.getValue() - end, 36));
      xid = e.getKey();
      end = e.getValue();
    }
    return list.toString();
  }

  /** Reads a note; {@link Note#NONE} for none. */
  static Note parse(String note) {
    if (note == null || note.isEmpty()) {
      return Note.NONE;
    }
    String[] parts = note.split("\\|", -1);
    boolean first = parts.length == 4 && parts[0].equals("1");
    if (!first && !(parts.length == 6 && (parts[0].equals("2") || parts[0].equals("3")))) {
      throw new IllegalArgumentException("a note txbox did not write beside the slot's place (" + note.length()
          + " characters)");
    }
    TreeMap<Long, Long> ranges = new TreeMap<>();
    for (String r : list(parts[1])) {
      int dash = r.indexOf('-');
      long start = Long.parseUnsignedLong(dash < 0 ? r : r.substring(0, dash));
      ranges.put(start, dash < 0 ? start : Long.parseUnsignedLong(r.substring(dash + 1)));
    }
    Map<Long, Long> recent = first ? Map.of() : readRecent(parts[2], parts[0].equals("3"));
    long rangesThrough = first ? 0 : Long.parseUnsignedLong(parts[3]);
    String partial = parts[parts.length - 2];
    long partialXid = 0;
    long partialRows = 0;
    if (!partial.isEmpty()) {
      String[] p = partial.split(":");
      partialXid = Long.parseUnsignedLong(p[0]);
      partialRows = Long.parseLong(p[1]);
    }
    return new Note(ranges, rangesThrough, recent, partialXid, partialRows, parts[parts.length - 1].equals("c"));
  }

  /** The recent transactions of a note of version 3 (as differences) or 2 (in full). */
  private static Map<Long, Long> readRecent(String part, boolean differences) {
    Map<Long, Long> recent = new LinkedHashMap<>();
    long xid = 0;
    long end = 0;
    for (String r : list(part)) {
      int at = r.indexOf('@');
      if (at < 0) {
        throw new IllegalArgumentException("a recent transaction without its commit's end in the note beside the"
            + " slot's place (" + r.length() + " characters)");
      }
      String id = r.substring(0, at);
      String commitEnd = r.substring(at + 1);
      if (differences) {
        xid += id.isEmpty() ? 1 : Long.parseLong(id, 36);
        end += Long.parseLong(commitEnd, 36);
      } else {
        xid = Long.parseUnsignedLong(id);
        end = Long.parseUnsignedLong(commitEnd);
      }
      recent.put(xid, end);
    }
    return recent;
  }

  private static String[] list(String part) {
    return part.isEmpty() ? new String[0] : part.split(",");
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

  /** Whether transaction {@code xid} is among {@code recent} or in one of {@code ranges}. */
  private static boolean named(Map<Long, Long> recent, TreeMap<Long, Long> ranges, long xid) {
    return recent.containsKey(xid) || contains(ranges, xid);
  }

  private static boolean contains(TreeMap<Long, Long> ranges, long xid) {
    Map.Entry<Long, Long> r = ranges.floorEntry(xid);
    return r != null && r.getValue() >= xid;
  }

  /** Moves the oldest recent transaction into the ranges. */
  private void fold(Instant now) {
    Map.Entry<Long, Long> oldest = recent.entrySet().iterator().next();
    recent.remove(oldest.getKey());
    if (!add(oldest.getKey())) {
      unrecordedSince = now;
    }
    rangesThrough = Math.max(rangesThrough, oldest.getValue());
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
