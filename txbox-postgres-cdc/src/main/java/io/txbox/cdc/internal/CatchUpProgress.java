package io.txbox.cdc.internal;

import io.txbox.spi.Checkpoint;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;

/**
 * How far a catch-up from the table got, kept at the broker beside its rows with exactly-once
 * delivery, so that one stopped or killed halfway is taken up where it stood: every row its
 * snapshot saw, of the buckets before {@code bucket} and of {@code bucket} up to {@code (tx,
 * position)}, is delivered. It holds only for the checkpoint it started from ({@code fromLsn} and
 * {@code fromTakenAt}): once the catch-up is done, the checkpoint is its snapshot, and this is
 * stale. Taken up, the catch-up reads in the first one's snapshot, whose checkpoint it then writes:
 * rows committed after it are the new slot's to stream.
 *
 * <p>Kept as bucket {@value #BUCKET} of the slot's progress: checkpoint {@code (tx, position)}, note
 * {@code 1|<fromLsn>|<fromTakenAt µs>|<bucket>|<below>|<open,...>|<lsn>|<timeline>|<takenAt µs>}.
 */
record CatchUpProgress(long fromLsn, Instant fromTakenAt, int bucket, long tx, long position,
    SlotCheckpoints.Candidate snapshot) {
  /** The bucket of the slot's progress at the broker that keeps it. */
  static final int BUCKET = 1;

  /** Whether it was made by a catch-up from {@code from}. */
  boolean startedFrom(SlotCheckpoints.Mark from) {
    return fromLsn == from.lsn() && fromTakenAt.equals(micros(from.takenAt()));
  }

  Checkpoint checkpoint() {
    return new Checkpoint(tx, position);
  }

  String note() {
    SlotCheckpoints.Candidate s = snapshot;
    return String.join("|", "1", Long.toString(fromLsn), Long.toString(epochMicros(fromTakenAt)),
        Integer.toString(bucket), Long.toUnsignedString(s.deliveredBelow()), String.join(",",
            Arrays.stream(s.stillOpen()).mapToObj(Long::toUnsignedString).toArray(String[]::new)),
        Long.toString(s.lsn()), Integer.toString(s.timeline()), Long.toString(epochMicros(s.takenAt())));
  }

  /** The progress of a catch-up from {@code from}, through the row at {@code entry}. */
  static CatchUpProgress of(SlotCheckpoints.Mark from, SlotCheckpoints.Candidate snapshot, PendingEvents.Entry entry) {
    return new CatchUpProgress(from.lsn(), micros(from.takenAt()), entry.bucket(), entry.xid(), entry.event().lsn(),
        snapshot);
  }

  /** What the broker keeps, or {@code null} when it keeps none. */
  static CatchUpProgress parse(Checkpoint checkpoint, String note) {
    if (checkpoint == null || note == null) {
      return null;
    }
    String[] p = note.split("\\|", -1);
    if (p.length != 9 || !p[0].equals("1")) {
      throw new IllegalArgumentException("a note txbox did not write beside the catch-up's progress ("
          + note.length() + " characters)");
    }
    long[] open = p[5].isEmpty() ? new long[0]
        : Arrays.stream(p[5].split(",")).mapToLong(Long::parseUnsignedLong).toArray();
    SlotCheckpoints.Candidate snapshot = new SlotCheckpoints.Candidate(Long.parseUnsignedLong(p[4]), open,
        Long.parseLong(p[6]), Integer.parseInt(p[7]), instant(Long.parseLong(p[8])));
    return new CatchUpProgress(Long.parseLong(p[1]), instant(Long.parseLong(p[2])), Integer.parseInt(p[3]),
        checkpoint.txId(), checkpoint.position(), snapshot);
  }

  /** As the database keeps times: to the microsecond. */
  private static Instant micros(Instant t) {
    return t.truncatedTo(ChronoUnit.MICROS);
  }

  private static long epochMicros(Instant t) {
    return ChronoUnit.MICROS.between(Instant.EPOCH, t);
  }

  private static Instant instant(long micros) {
    return Instant.EPOCH.plus(micros, ChronoUnit.MICROS);
  }
}
