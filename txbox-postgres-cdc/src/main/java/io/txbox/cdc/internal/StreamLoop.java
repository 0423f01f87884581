package io.txbox.cdc.internal;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.DeadLetterSink;
import io.txbox.spi.Metrics;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.support.RetryBudget;
import io.txbox.spi.support.Secrets;
import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The logical relay's work: take the slot (or wait as a standby while another relay streams it),
 * read committed transactions in commit order, publish what is sendable, wait for the acks,
 * dead-letter what the retry policy gives up on, and confirm the end of every transaction whose
 * events are all done. A lost connection drops everything not confirmed; the next session reads
 * it again from the slot (duplicates possible, loss never).
 *
 * <p>Its progress is also kept in the outbox's own terms ({@link SlotCheckpoints}), which reach
 * the standbys with the data. Before each session it looks at the slot: one missing where a
 * checkpoint says it was streamed (a standby promoted before PostgreSQL 17 has no slot), or one
 * that a failover did not carry over from the former primary, is created where needed and
 * preceded by the outbox rows the checkpoint does not cover ({@link OutboxCatchUp}), published
 * through the same retries and dead letters as the stream. Events written as WAL messages since
 * the checkpoint exist in no table: that range is recorded, logged and shown by {@code txbox status}.
 */
public final class StreamLoop implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(StreamLoop.class);
  private static final Duration MIN_PAUSE = Duration.ofNanos(100_000);
  /** Longest pause between attempts: a failover's new primary is tried within seconds of taking writes. */
  private static final Duration MAX_ERROR_PAUSE = Duration.ofSeconds(5);

  private final StreamSettings settings;
  private final Publisher publisher;
  private final DeadLetterSink deadLetters;
  private final SlotCheckpoints checkpoints;
  private final DataSource dataSource;
  private final Metrics metrics;
  private final RetryBudget budget;
  private final Clock clock = Clock.systemUTC();
  private final ExecutorService publishing;
  private volatile boolean running = true;
  private volatile boolean streaming;
  private volatile boolean troubled;
  private volatile String problem;
  private volatile long confirmedLsn;
  private volatile Instant oldestPending;
  private volatile int pendingCount;
  private volatile boolean walMessagesSeen;
  /** The checkpoint waiting for the slot to be confirmed past its position; checkpoint thread only. */
  private SlotCheckpoints.Candidate candidate;
  /**
   * Whether the checkpoint records a publish being retried (see {@link #noteRetrying}); null until
   * this loop wrote it, since a relay that died while retrying left its record behind.
   */
  private Boolean retrying;

  public StreamLoop(StreamSettings settings, Publisher publisher, DeadLetterSink deadLetters,
      DataSource dataSource, Metrics metrics) {
    this.settings = settings;
    this.publisher = publisher;
    this.deadLetters = deadLetters;
    this.dataSource = dataSource;
    this.checkpoints = new SlotCheckpoints(dataSource, settings.outboxSchema(), settings.tablePrefix(),
        settings.slot());
    this.metrics = metrics;
    this.budget = new RetryBudget(settings.retryPolicy());
    this.publishing = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "txbox-logical-publish-" + settings.slot());
      t.setDaemon(true);
      return t;
    });
  }

  /** Asks the loop to finish the batch in hand, confirm, and end. */
  public void stop() {
    running = false;
  }

  /** Whether this relay streams the slot now (and is not a standby). */
  public boolean isStreaming() {
    return streaming;
  }

  /** Whether the last attempt to stream failed; why is in {@link #problem()}. */
  public boolean isTroubled() {
    return troubled;
  }

  /** The last error, or {@code null}. */
  public String problem() {
    return problem;
  }

  /** The last position this relay confirmed to the slot, 0 before the first. */
  public long confirmedLsn() {
    return confirmedLsn;
  }

  /** Events read and not yet confirmed. */
  public int pending() {
    return pendingCount;
  }

  /** Commit time of the oldest transaction read and not yet confirmed, or {@code null}. */
  public Instant oldestPending() {
    return oldestPending;
  }

  private Duration errorPause = Duration.ofMillis(100);

  @Override
  public void run() {
    boolean toldStandby = false;
    try {
      while (running) {
        if (!prepareSlot()) {
          continue; // stopped, or trying again after a failure it logged
        }
        try (ReplicationSession session = ReplicationSession.start(settings.jdbcUrl(),
            settings.connectionProperties(), settings.slot(), settings.publication(),
            settings.statusInterval().toMillis())) {
          streaming = true;
          troubled = false;
          problem = null;
          toldStandby = false;
          log.info("slot {}: streaming (this relay is the active one)", settings.slot());
          stream(session);
          errorPause = Duration.ofMillis(100);
        } catch (SQLException e) {
          if (ReplicationSession.OBJECT_IN_USE.equals(e.getSQLState())) {
            if (!toldStandby) {
              log.info("slot {}: another relay streams it; standing by, trying every {} ms",
                  settings.slot(), settings.standbyInterval().toMillis());
              toldStandby = true;
            }
            pause(settings.standbyInterval());
            continue;
          }
          failed(describeFailure(e), e);
        } catch (RuntimeException | Error e) {
          // A bug or a broken message must never end the loop: the slot is read again.
          failed(e.toString(), e);
        } finally {
          streaming = false;
          oldestPending = null;
          pendingCount = 0;
        }
      }
    } finally {
      publishing.shutdown();
    }
  }

  private void failed(String why, Throwable e) {
    troubled = true;
    problem = why;
    log.error("slot {}: {}; trying again in {} ms", settings.slot(), why, errorPause.toMillis(), e);
    pause(errorPause);
    Duration next = errorPause.multipliedBy(2);
    errorPause = next.compareTo(MAX_ERROR_PAUSE) > 0 ? MAX_ERROR_PAUSE : next;
  }

  /**
   * Makes sure the stream that is about to start is preceded by every event its checkpoint does
   * not cover (see the class comment); returns whether to stream now.
   */
  private boolean prepareSlot() {
    try {
      Optional<SlotCheckpoints.Slot> slot = checkpoints.slot();
      Optional<SlotCheckpoints.Mark> mark = checkpoints.read();
      if (mark.isEmpty()) {
        return true; // no checkpoint yet: a missing slot is reported by the session, as before
      }
      SlotCheckpoints.Mark from = mark.get();
      int timeline = checkpoints.timeline();
      long start;
      if (slot.isPresent()) {
        if (from.timeline() == timeline || slot.get().synced() || slot.get().lost()) {
          return true; // its own, or kept in step by the failover it came through; a lost one stops loudly
        }
        start = slot.get().confirmedLsn();
        log.warn("slot {}: the server's timeline moved from {} to {} since the relay's last checkpoint ({}), and the"
                + " slot was not kept in step from the former primary: relaying from the outbox table every event"
                + " the checkpoint does not cover before streaming it", settings.slot(), from.timeline(), timeline,
            from.markedAt());
      } else {
        try (Connection c = dataSource.getConnection()) {
          c.setAutoCommit(true);
          start = checkpoints.createSlot(c);
        }
        log.warn("slot {}: missing on this server (timeline {}), though the relay streamed it until {} (timeline {}):"
                + " a failover to a standby that had no copy of it? Created it again at {}, and relaying from the outbox"
                + " table every event the checkpoint does not cover before streaming it", settings.slot(), timeline,
            from.markedAt(), from.timeline(), Lsn.format(start));
      }
      if (from.walMessages() && start > from.lsn()) {
        checkpoints.recordGap(from, start);
        log.error("slot {}: events written as WAL messages from {} (WAL {}, timeline {}) up to now (WAL {}, timeline {})"
                + " were not relayed and cannot be: they exist in no table, and no slot holds that WAL any more. Send"
                + " them again from their source, then run txbox logical acknowledge-gap --slot {}. Events written as"
                + " outbox rows are relayed from the table", settings.slot(), from.markedAt(), Lsn.format(from.lsn()),
            from.timeline(), Lsn.format(start), timeline, settings.slot());
      }
      return catchUp(from);
    } catch (SQLException | RuntimeException e) {
      failed("cannot prepare slot " + settings.slot() + ": " + e.getMessage(), e);
      return false;
    }
  }

  /**
   * Publishes the outbox rows {@code from} does not cover, through the same retries and dead
   * letters as the stream, then writes the catch-up's snapshot as the checkpoint. Returns false
   * when stopped first: the checkpoint stays, and the next start catches up again.
   */
  private boolean catchUp(SlotCheckpoints.Mark from) throws SQLException {
    try (OutboxCatchUp rows = new OutboxCatchUp(dataSource, settings.outboxSchema() + "." + settings.outboxTable(),
        settings.outboxSchema() + "." + settings.tablePrefix() + "setting", from)) {
      PendingEvents pending = new PendingEvents();
      boolean exhausted = false;
      Duration pause = MIN_PAUSE;
      while (running) {
        while (!exhausted && pending.size() < settings.maxPending()) {
          List<CommittedTransaction> page = rows.next(settings.batchSize());
          exhausted = page.isEmpty();
          page.forEach(pending::add);
        }
        List<PendingEvents.Entry> batch = pending.sendable(clock.instant(), settings.batchSize());
        if (!batch.isEmpty()) {
          Flight flight = submit(batch);
          settle(flight, await(() -> {}, flight));
          pause = MIN_PAUSE;
        } else if (!pending.isEmpty()) {
          pause(untilDue(pending, pause)); // retries and delayed events wait for their time
          pause = pause.multipliedBy(2).compareTo(settings.idleInterval()) > 0 ? settings.idleInterval() : pause.multipliedBy(2);
        }
        pending.confirmable(); // drops what is done
        oldestPending = pending.oldestCommitTime();
        pendingCount = pending.size();
        if (exhausted && pending.isEmpty()) {
          checkpoints.write(rows.snapshot(), from.walMessages() || walMessagesSeen);
          log.info("slot {}: relayed {} outbox row(s) the checkpoint did not cover; streaming", settings.slot(),
              rows.read());
          return true;
        }
      }
      return false;
    }
  }

  /**
   * Moves the checkpoint on: writes the last candidate once the slot is confirmed past its
   * position, and takes the next. Called every checkpoint interval from a thread of its own,
   * while this relay streams.
   */
  public void checkpoint() {
    if (!streaming) {
      candidate = null;
      return;
    }
    if (candidate != null && confirmedLsn >= candidate.lsn()) {
      checkpoints.write(candidate, walMessagesSeen);
      candidate = null;
    }
    if (candidate == null) {
      candidate = checkpoints.candidate();
    }
  }

  private String describeFailure(SQLException e) {
    String message = String.valueOf(e.getMessage());
    if (ReplicationSession.UNDEFINED_OBJECT.equals(e.getSQLState()) && message.contains("slot")) {
      return "replication slot " + settings.slot() + " does not exist: create it with txbox migrate --logical"
          + " (LogicalReplication.migrate()); the relay never creates it itself, so that a dropped slot"
          + " is not silently replaced by one that starts at today's position";
    }
    if (message.contains("invalidated") || message.contains("can no longer get changes")) {
      return "replication slot " + settings.slot() + " was invalidated: the server removed WAL it still"
          + " needed (max_slot_wal_keep_size), so events committed since its last confirmed position may"
          + " not have been relayed. Recovery: (1) txbox logical status shows the slot as lost;"
          + " (2) events written as outbox rows are still in the table: replay them with txbox replay"
          + " --since <the commit time of the last event your consumers have>; events written as WAL"
          + " messages in the removed WAL are gone unless you archive WAL; (3) txbox logical drop, then"
          + " txbox migrate --logical creates a new slot at today's position; (4) raise"
          + " max_slot_wal_keep_size or keep a standby relay running. Server said: " + message;
    }
    return "cannot stream slot " + settings.slot() + ": " + message;
  }

  /**
   * Reads, publishes and confirms, pipelined: while one batch is with the broker the loop goes on
   * reading and decoding, and the next batch leaves as soon as the previous one is settled. One
   * batch at a time keeps each key's order, since a key with an event in flight sends no other.
   */
  private void stream(ReplicationSession session) throws SQLException {
    TransactionAssembler assembler = new TransactionAssembler(
        settings.messagePrefix(), settings.outboxSchema(), settings.outboxTable());
    PendingEvents pending = new PendingEvents();
    Flight flight = null;
    Duration pause = MIN_PAUSE;
    while (running) {
      boolean progress = read(session, assembler, pending, flight);
      if (flight != null && flight.result.isDone()) {
        settle(flight, await(session::sendStatus, flight));
        flight = null;
        progress = true;
        // Told before the next batch leaves, not with the next status update: a relay killed now
        // sends again at most that batch, not all it has acknowledged since the last update.
        if (confirm(session, pending, assembler)) {
          session.sendStatus();
        }
      }
      if (flight == null) {
        List<PendingEvents.Entry> batch = pending.sendable(clock.instant(), settings.batchSize());
        if (!batch.isEmpty()) {
          flight = submit(batch);
          progress = true;
        }
      }
      confirm(session, pending, assembler);
      if (progress) {
        pause = MIN_PAUSE;
      } else if (flight != null) {
        waitBriefly(flight);
      } else {
        pause(untilDue(pending, pause));
        pause = pause.multipliedBy(2).compareTo(settings.idleInterval()) > 0 ? settings.idleInterval() : pause.multipliedBy(2);
      }
    }
    if (flight != null) { // a graceful stop settles and confirms the batch in hand
      settle(flight, await(session::sendStatus, flight));
      confirm(session, pending, assembler);
    }
    session.sendStatus();
  }

  /** Confirms the end of the finished transactions at the head; returns whether the position moved. */
  private boolean confirm(ReplicationSession session, PendingEvents pending, TransactionAssembler assembler) {
    long before = session.confirmed();
    if (assembler.sawWalMessages() && !walMessagesSeen) {
      // Kept at once, not with the next checkpoint: a failover before that would otherwise find a
      // slot that never carried WAL messages, and lose them without a word.
      checkpoints.noteWalMessages();
      walMessagesSeen = true;
    }
    OptionalLong done = pending.confirmable();
    if (done.isPresent()) {
      confirm(session, done.getAsLong());
    } else if (pending.isEmpty() && !assembler.inTransaction()) {
      // Idle: everything before the last keep-alive's position is done, so the slot may move on
      // past other databases' and tables' WAL instead of keeping it.
      confirm(session, session.lastReceived());
    }
    oldestPending = pending.oldestCommitTime();
    pendingCount = pending.size();
    return session.confirmed() != before;
  }

  /**
   * Reads what has arrived, but stops at the end of a transaction when the broker holds nothing of
   * this relay's or has answered: a steady stream never runs dry, and reading on would hold back
   * what is ready to send. While a batch is with the broker, reading on gathers the next one.
   */
  private boolean read(ReplicationSession session, TransactionAssembler assembler, PendingEvents pending,
      Flight flight) throws SQLException {
    boolean any = false;
    while (pending.size() < settings.maxPending()) {
      ByteBuffer data = session.readPending();
      if (data == null) {
        break;
      }
      any = true;
      Optional<CommittedTransaction> committed = assembler.accept(session.lastReceived(), data);
      if (committed.isPresent()) {
        pending.add(committed.get());
        if (flight == null || flight.result.isDone()) {
          break;
        }
      }
    }
    return any;
  }

  private Duration untilDue(PendingEvents pending, Duration pause) {
    Instant due = pending.nextDue();
    if (due == null) {
      return pause;
    }
    Duration left = Duration.between(clock.instant(), due);
    return left.compareTo(pause) < 0 ? (left.isNegative() ? MIN_PAUSE : left) : pause;
  }

  /** A batch with the broker: its entries, which of them were sent, and the broker's answer to come. */
  private record Flight(List<PendingEvents.Entry> batch, List<Integer> indexes, List<Message> messages,
      Future<PublishResult> result) {}

  /** Hands the readable events to the publisher thread; unreadable ones go to the dead letters when it settles. */
  private Flight submit(List<PendingEvents.Entry> batch) {
    List<Message> messages = new ArrayList<>(batch.size());
    List<Integer> indexes = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      PendingEvents.Entry e = batch.get(i);
      e.sent();
      if (e.event().isReadable()) {
        indexes.add(i);
        messages.add(e.event().message());
      }
    }
    Future<PublishResult> result = messages.isEmpty()
        ? CompletableFuture.completedFuture(PublishResult.allAcknowledged(0))
        : publishing.submit(() -> {
          try {
            return publisher.publish(messages);
          } catch (RuntimeException e) {
            return PublishResult.allFailed(messages.size(), e);
          }
        });
    return new Flight(batch, indexes, messages, result);
  }

  /** What keeps the replication connection alive while a publish waits; nothing before a session. */
  private interface KeepAlive {
    void send() throws SQLException;
  }

  /** Waits for the broker's answer, keeping the replication connection alive meanwhile. */
  private PublishResult await(KeepAlive keepAlive, Flight flight) throws SQLException {
    while (true) {
      try {
        return flight.result.get(settings.statusInterval().toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        keepAlive.send(); // a slow broker must not let wal_sender_timeout end the stream
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return PublishResult.allFailed(flight.messages.size(), e);
      } catch (ExecutionException e) {
        return PublishResult.allFailed(flight.messages.size(), new IllegalStateException(e.getCause()));
      }
    }
  }

  private void waitBriefly(Flight flight) {
    try {
      flight.result.get(settings.idleInterval().toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException | ExecutionException e) {
      // settled by the next turn of the loop
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Marks what the broker acknowledged, schedules retries, and dead-letters what the policy gives
   * up on (and every unreadable record) before anything past them can be confirmed.
   */
  private void settle(Flight flight, PublishResult result) {
    Instant now = clock.instant();
    List<Message> acknowledged = new ArrayList<>();
    List<DeadLetter> letters = new ArrayList<>();
    List<PendingEvents.Entry> lettered = new ArrayList<>();
    for (PendingEvents.Entry e : flight.batch) {
      if (!e.event().isReadable()) {
        letters.add(letter(e, e.event().unreadable(), 1));
        lettered.add(e);
      }
    }
    Set<String> failedKeys = new HashSet<>();
    Exception retried = null;
    for (int j = 0; j < flight.indexes.size(); j++) {
      PendingEvents.Entry e = flight.batch.get(flight.indexes.get(j));
      Exception error = result.failure(j);
      String key = e.event().message().key();
      if (key != null && failedKeys.contains(key)) {
        e.heldBack(); // an earlier event of its key failed: this one goes again after it
      } else if (error == null) {
        acknowledged.add(e.event().message());
        e.done();
      } else {
        RetryBudget.Verdict verdict = budget.afterFailure(error, e.attempts(), result);
        if (verdict.deadLetter()) {
          letters.add(letter(e, verdict.error(), verdict.attempts()));
          lettered.add(e);
          continue;
        }
        Duration backoff = settings.retryPolicy().delayAfter(e.failures() + 1, ThreadLocalRandom.current());
        e.failed(verdict.attempts(), now.plus(backoff));
        metrics.retrying(settings.slot(), e.event().message(), verdict.attempts(), error);
        retried = error;
        if (key != null) {
          failedKeys.add(key);
        }
      }
    }
    deadLetters.saveDeadLetterCopies(letters); // throws when it cannot: the stream is read again
    lettered.forEach(PendingEvents.Entry::done);
    for (DeadLetter d : letters) {
      log.warn("slot {}: dead-lettered {} (type {}, key {}) after {} attempt(s): {}", settings.slot(),
          d.message().id(), d.message().type(), d.message().key(), d.attempts(), d.error());
      metrics.deadLettered(d);
    }
    if (!acknowledged.isEmpty()) {
      metrics.published(settings.slot(), acknowledged);
    }
    noteRetrying(retried, !acknowledged.isEmpty());
  }

  /**
   * Keeps the checkpoint's record of a publish being retried in step, written only when that
   * changes: a failure starts it, a batch acknowledged without one ends it. A write that fails
   * stops nothing: the stream matters more than its report.
   */
  private void noteRetrying(Exception retried, boolean acknowledged) {
    try {
      if (retried != null && !Boolean.TRUE.equals(retrying)) {
        checkpoints.noteRetrying(Secrets.mask(retried.toString()));
        retrying = true;
      } else if (retried == null && acknowledged && !Boolean.FALSE.equals(retrying)) {
        checkpoints.noteDelivering();
        retrying = false;
      }
    } catch (RuntimeException e) {
      log.warn("slot {}: could not record in {} whether it retries a failed publish: {}", settings.slot(),
          checkpoints.table(), e.getMessage());
    }
  }

  private DeadLetter letter(PendingEvents.Entry e, String error, int attempts) {
    return new DeadLetter(settings.slot(), 0, new Checkpoint(0, e.event().lsn()), e.event().message(), error, attempts);
  }

  private void confirm(ReplicationSession session, long lsn) {
    session.confirm(lsn);
    confirmedLsn = session.confirmed();
  }

  /** Sleeps, in slices short enough that a stop is seen within 100 ms. */
  private void pause(Duration d) {
    long end = System.nanoTime() + d.toNanos();
    long left = d.toNanos();
    while (running && left > 0) {
      LockSupport.parkNanos(Math.min(left, 100_000_000L));
      left = end - System.nanoTime();
    }
  }
}
