package io.txbox.cdc.internal;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;

/**
 * The events read from the slot and not yet done, in commit order. A key's events are sendable,
 * in order, up to its first one that is in flight or whose retry or delivery time has not come,
 * so a batch may carry several events of a key (the publisher keeps their order) and a failing
 * key waits alone while every other key goes on. The slot may confirm the end
 * of every transaction at the head whose events are all done (acknowledged or dead-lettered).
 */
public final class PendingEvents {
  private final ArrayDeque<Transaction> transactions = new ArrayDeque<>();
  private int size;

  /** One event and what became of it so far. */
  public static final class Entry {
    private final StreamEvent event;
    private final String orderKey;
    private final StreamProgress place;
    private final long xid;
    private final int bucket;
    private final int transactionSize;
    private final int rowsUpTo;
    private int attempts;
    private int failures;
    private Instant nextAttemptAt;
    private boolean inFlight;
    private boolean done;

    private Entry(StreamEvent event, StreamProgress place, long xid, int bucket, int transactionSize, int rowsUpTo) {
      this.event = event;
      this.place = place;
      this.xid = xid;
      this.bucket = bucket;
      this.transactionSize = transactionSize;
      this.rowsUpTo = rowsUpTo;
      // Events without a key are ordered with nothing: each is its own key.
      String key = event.message().key();
      this.orderKey = key != null ? "k:" + key : "i:" + event.message().id();
    }

    public StreamEvent event() {
      return event;
    }

    /** Where it stands in the stream: its transaction's end, and the events of it up to and including this one. */
    public StreamProgress place() {
      return place;
    }

    /**
     * Its transaction's id: the 32 bits the stream reports (0 for a WAL message outside any), or
     * the full id of a row the catch-up read.
     */
    public long xid() {
      return xid;
    }

    /** The outbox bucket of a row the catch-up read from the table; -1 from the stream. */
    public int bucket() {
      return bucket;
    }

    /** How many events its transaction holds. */
    public int transactionSize() {
      return transactionSize;
    }

    /** How many of its transaction's events up to and including it are outbox rows. */
    public int rowsUpTo() {
      return rowsUpTo;
    }

    /** What its order is kept within: its key, or, without one, the event alone. */
    public String orderKey() {
      return orderKey;
    }

    /** The failed attempts that count toward the retry policy (see {@code RetryBudget}). */
    public int attempts() {
      return attempts;
    }

    /** How often publishing it failed, outages included: the backoff's level. */
    public int failures() {
      return failures;
    }

    /** Marks it handed to the publisher. */
    public void sent() {
      inFlight = true;
    }

    /** Acknowledged by the broker, or dead-lettered: finished. */
    public void done() {
      inFlight = false;
      done = true;
    }

    /**
     * Sent after an event of its key that failed: not counted as an attempt, and sent again once
     * the failed one is done, so that the key's order holds at the broker.
     */
    public void heldBack() {
      inFlight = false;
    }

    /**
     * Failed, with {@code attempts} now counted; tried again at {@code nextAttemptAt}, and until
     * then its key waits.
     */
    public void failed(int attempts, Instant nextAttemptAt) {
      inFlight = false;
      this.attempts = attempts;
      failures++;
      this.nextAttemptAt = nextAttemptAt;
    }

    private boolean due(Instant now) {
      Instant availableAt = event.message().availableAt();
      return (nextAttemptAt == null || !nextAttemptAt.isAfter(now))
          && (availableAt == null || !availableAt.isAfter(now));
    }
  }

  private record Transaction(long endLsn, Instant commitTime, List<Entry> entries) {
    boolean done() {
      return entries.stream().allMatch(e -> e.done);
    }
  }

  /** Appends a committed transaction's events. */
  public void add(CommittedTransaction committed) {
    add(committed, StreamProgress.NONE, false);
  }

  /**
   * Appends a committed transaction's events, those delivered already done: they are passed, not
   * sent. Delivered are the events {@code delivered} covers (the broker holds them from before),
   * and, when {@code rowsDelivered}, the transaction's outbox rows (the slot's checkpoint covers
   * the transaction: its rows were delivered before, from the stream or the table).
   *
   * @return how many were passed
   */
  public int add(CommittedTransaction committed, StreamProgress delivered, boolean rowsDelivered) {
    List<Entry> entries = new ArrayList<>(committed.events().size());
    int passed = 0;
    int rows = 0;
    for (StreamEvent e : committed.events()) {
      rows += e.row() ? 1 : 0;
      Entry entry = new Entry(e, new StreamProgress(committed.endLsn(), entries.size() + 1), committed.xid(),
          committed.bucket(), committed.events().size(), rows);
      if (delivered.covers(entry.place) || (rowsDelivered && e.row())) {
        entry.done = true;
        passed++;
      }
      entries.add(entry);
    }
    transactions.add(new Transaction(committed.endLsn(), committed.commitTime(), entries));
    size += entries.size();
    return passed;
  }

  /** How many events are held, done ones at the head included until confirmed. */
  public int size() {
    return size;
  }

  public boolean isEmpty() {
    return transactions.isEmpty();
  }

  /** Up to {@code max} events that may be sent now, in commit order. */
  public List<Entry> sendable(Instant now, int max) {
    List<Entry> batch = new ArrayList<>();
    Set<String> waitingKeys = new HashSet<>();
    for (Transaction t : transactions) {
      for (Entry e : t.entries) {
        if (e.done || waitingKeys.contains(e.orderKey)) {
          continue;
        }
        if (e.inFlight || !e.due(now)) {
          waitingKeys.add(e.orderKey); // the key's later events wait for this one
          continue;
        }
        batch.add(e);
        if (batch.size() == max) {
          return batch;
        }
      }
    }
    return batch;
  }

  /**
   * Up to {@code max} events that may be sent now, strictly in commit order: the batch ends before
   * the first event that is in flight or not due, whatever its key. Exactly-once delivery keeps
   * one place in the stream, which nothing sent may pass.
   */
  public List<Entry> sendableInOrder(Instant now, int max) {
    List<Entry> batch = new ArrayList<>();
    for (Transaction t : transactions) {
      for (Entry e : t.entries) {
        if (e.done) {
          continue;
        }
        if (e.inFlight || !e.due(now)) {
          return batch;
        }
        batch.add(e);
        if (batch.size() == max) {
          return batch;
        }
      }
    }
    return batch;
  }

  /**
   * Removes the finished transactions at the head and returns the end of the last one: every
   * event before it is done, so the slot may confirm it.
   */
  public OptionalLong confirmable() {
    long end = -1;
    while (!transactions.isEmpty() && transactions.peek().done()) {
      Transaction t = transactions.poll();
      size -= t.entries.size();
      end = t.endLsn;
    }
    return end < 0 ? OptionalLong.empty() : OptionalLong.of(end);
  }

  /** The commit time of the oldest transaction not yet done, if any; for the lag's age. */
  public Instant oldestCommitTime() {
    for (Transaction t : transactions) {
      if (t.commitTime != null) {
        return t.commitTime;
      }
    }
    return null;
  }

  /** The earliest time a waiting event becomes due, to sleep until then; {@code null} for none. */
  public Instant nextDue() {
    Instant next = null;
    for (Transaction t : transactions) {
      for (Entry e : t.entries) {
        if (!e.done && !e.inFlight) {
          Instant at = later(e.nextAttemptAt, e.event.message().availableAt());
          if (at != null && (next == null || at.isBefore(next))) {
            next = at;
          }
        }
      }
    }
    return next;
  }

  private static Instant later(Instant a, Instant b) {
    if (a == null) {
      return b;
    }
    return b == null || a.isAfter(b) ? a : b;
  }
}
