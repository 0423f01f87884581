package io.txbox.cdc.internal;

import io.txbox.Delivery;
import io.txbox.spi.DeadLetterSink;
import io.txbox.spi.Metrics;
import io.txbox.spi.Publisher;
import io.txbox.spi.TransactionalPublisher;
import io.txbox.spi.support.LoopGuard;
import java.nio.ByteBuffer;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The logical relay's work: take the slot (or wait as a standby while another relay streams it),
 * read committed transactions in commit order, hand what is sendable to the {@link PublishPipeline},
 * and confirm the end of every transaction whose events are all done. A lost connection drops
 * everything not confirmed; the next session reads it again from the slot (duplicates possible,
 * loss never).
 *
 * <p>Its progress is also kept in the outbox's own terms ({@link SlotCheckpoints}), which reach
 * the standbys with the data. Before each session {@link SlotRecovery} looks at the slot, and the
 * outbox rows its checkpoint does not cover are relayed first, through the same pipeline
 * ({@link TableCatchUp}). Each session runs under a {@link LoopGuard}: nothing it throws ends the
 * loop.
 */
public final class StreamLoop implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(StreamLoop.class);
  private static final Duration FIRST_ERROR_PAUSE = Duration.ofMillis(100);
  /** Longest pause between attempts: a failover's new primary is tried within seconds of taking writes. */
  private static final Duration MAX_ERROR_PAUSE = Duration.ofSeconds(5);

  private final StreamSettings settings;
  private final SlotCheckpoints checkpoints;
  private final SlotRecovery recovery;
  private final PublishPipeline pipeline;
  private final TableCatchUp catchUp;
  private final Pacing pacing;
  /** The broker transactions of exactly-once delivery; {@code null} at least once. */
  private final SlotTransactions transactions;
  private final LoopGuard guard;
  private final Clock clock = Clock.systemUTC();
  private final ServerCalls calls;
  private volatile boolean running = true;
  private volatile boolean streaming;
  private volatile boolean troubled;
  private volatile String problem;
  private volatile long confirmedLsn;
  /** The timeline of the server the current session streams from. */
  private volatile int streamTimeline;
  private volatile Instant oldestPending;
  private volatile int pendingCount;
  private volatile boolean walMessagesSeen;
  private boolean toldStandby;
  /** The slot's checkpoint when this session began streaming; loop thread only. */
  private SlotCheckpoints.Mark covering;
  /** Events passed in this session because they were delivered before; loop thread only. */
  private long passedInSession;
  private boolean toldPassed;
  private Duration errorPause = FIRST_ERROR_PAUSE;
  /** The checkpoint waiting for the slot to be confirmed past its position; checkpoint thread only. */
  private SlotCheckpoints.Candidate candidate;

  /**
   * @param outboxId the outbox's own id, kept with exactly-once progress at the broker (read when
   *     the relay first streams); {@code null} when the tables keep none
   */
  public StreamLoop(StreamSettings settings, Publisher publisher, DeadLetterSink deadLetters,
      DataSource dataSource, Metrics metrics, Supplier<String> outboxId) {
    this.settings = settings;
    this.checkpoints = new SlotCheckpoints(dataSource, settings.tables().slotCheckpoint(), settings.slot());
    this.calls = new ServerCalls(settings.slot(), settings.waitWarning(), clock);
    this.recovery = new SlotRecovery(settings.slot(), checkpoints, dataSource, calls);
    this.transactions = settings.delivery() == Delivery.EXACTLY_ONCE
        ? new SlotTransactions(settings.slot(), (TransactionalPublisher) publisher, outboxId, metrics)
        : null;
    this.pipeline = new PublishPipeline(settings, publisher, deadLetters, checkpoints, metrics, clock, transactions);
    this.pacing = new Pacing(() -> running, settings.idleInterval(), clock);
    this.catchUp = new TableCatchUp(settings, dataSource, pipeline, transactions, calls, pacing, clock);
    this.guard = new LoopGuard("txbox logical relay of slot " + settings.slot());
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

  /** The calls to the server this relay is in now. */
  public ServerCalls calls() {
    return calls;
  }

  @Override
  public void run() {
    try (pipeline) {
      while (running) {
        if (guard.attempt(this::session)) {
          errorPause = FIRST_ERROR_PAUSE;
        } else {
          failed(guard.lastFailure());
        }
      }
    }
  }

  /** A failed session: why is kept for the status, and the next waits a little longer. */
  private void failed(Throwable e) {
    troubled = true;
    problem = e instanceof StreamFailure ? e.getMessage() : String.valueOf(e);
    log.info("slot {}: trying again in {} ms", settings.slot(), errorPause.toMillis());
    pacing.pause(errorPause);
    Duration next = errorPause.multipliedBy(2);
    errorPause = next.compareTo(MAX_ERROR_PAUSE) > 0 ? MAX_ERROR_PAUSE : next;
  }

  /** Why a session could not stream, in the words the status and the log show. */
  private static final class StreamFailure extends RuntimeException {
    StreamFailure(String message, Throwable cause) {
      super(message, cause);
    }

    @Override
    public String toString() {
      return getMessage(); // written for people: the loop guard's log line needs no class name
    }
  }

  /**
   * One session: relays what the checkpoint does not cover, then streams the slot until stopped
   * or the connection fails; a standby waits its turn and returns.
   */
  private void session() throws SQLException {
    try {
      streamSlot();
    } finally {
      if (transactions != null) {
        transactions.abandon(); // a session that failed mid-batch leaves nothing open at the broker
      }
    }
  }

  private void streamSlot() throws SQLException {
    if (!prepareSlot()) {
      return; // stopped during the catch-up
    }
    try (ReplicationSession session = calls.call("the server to start streaming slot " + settings.slot(),
        () -> ReplicationSession.start(settings.jdbcUrl(), settings.connectionProperties(), settings.slot(),
            settings.publication(), settings.statusInterval().toMillis()))) {
      streamTimeline = session.timeline();
      streaming = true;
      troubled = false;
      problem = null;
      toldStandby = false;
      log.info("slot {}: streaming (this relay is the active one)", settings.slot());
      stream(session, transactions == null ? StreamProgress.NONE : transactions.takeOver(reference()));
    } catch (SQLException e) {
      if (!ReplicationSession.OBJECT_IN_USE.equals(e.getSQLState())) {
        throw new StreamFailure(describeFailure(e), e);
      }
      if (!toldStandby) {
        log.info("slot {}: another relay streams it; standing by, trying every {} ms",
            settings.slot(), settings.standbyInterval().toMillis());
        toldStandby = true;
      }
      pacing.pause(settings.standbyInterval());
    } finally {
      streaming = false;
      oldestPending = null;
      pendingCount = 0;
    }
  }

  /**
   * Relays what the slot's checkpoint does not cover (see {@link SlotRecovery}), then reads the
   * checkpoint the stream starts from; returns whether to stream now.
   */
  private boolean prepareSlot() {
    try {
      Optional<SlotCheckpoints.Mark> from = recovery.catchUpFrom(); // its calls are watched there
      if (from.isPresent()) {
        Optional<SlotCheckpoints.Candidate> caughtUp = catchUp.run(from.get(), this::report);
        if (caughtUp.isEmpty()) {
          return false;
        }
        writeCheckpoint(caughtUp.get(), from.get().walMessages() || walMessagesSeen);
      }
      covering = calls.run("the database to read the checkpoint of slot " + settings.slot(), checkpoints::read)
          .orElse(null);
      return true;
    } catch (SQLException | RuntimeException e) {
      throw new StreamFailure("cannot prepare slot " + settings.slot() + ": " + e.getMessage(), e);
    }
  }

  /** A full transaction id of about now, which the stream's 32-bit ids are read near. */
  private long reference() {
    return covering != null ? covering.deliveredBelow()
        : calls.run("the database to read a checkpoint of slot " + settings.slot(), checkpoints::candidate)
            .deliveredBelow();
  }

  /**
   * Whether the slot's checkpoint covers {@code committed}: its outbox rows were delivered before,
   * from the stream or, after a failover that lost the slot, from the table. Such a transaction is
   * read again when a failover slot came over behind the checkpoint, or when it committed between
   * the slot's creation and the catch-up's snapshot.
   */
  private boolean rowsDelivered(CommittedTransaction committed) {
    return covering != null && committed.xid() != 0
        && covering.covers(DeliveredPastMark.widen(covering.deliveredBelow(), committed.xid()));
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
    if (candidate != null && candidate.timeline() != streamTimeline) {
      // Read through the pool on another server than the one streamed: a failover under way, while
      // the stream from the former primary has not failed yet. Its position does not describe
      // this stream, and written it would claim the new primary's events as delivered.
      candidate = null;
    }
    if (candidate != null && confirmedLsn >= candidate.lsn()) {
      writeCheckpoint(candidate, walMessagesSeen);
      candidate = null;
    }
    if (candidate == null) {
      candidate = calls.run("the database to read a checkpoint of slot " + settings.slot(), checkpoints::candidate);
    }
  }

  private void writeCheckpoint(SlotCheckpoints.Candidate c, boolean walMessages) {
    calls.run(committing("the checkpoint of slot " + settings.slot()), () -> {
      checkpoints.write(c, walMessages);
      return null;
    });
    if (transactions != null) {
      transactions.covered(c);
    }
  }

  /** What waiting for a commit of {@code what} means, and its usual causes. */
  static String committing(String what) {
    return "the database to commit " + what + ": a commit does not return while a synchronous standby named in"
        + " synchronous_standby_names is gone, or while a lock it needs is held (txbox status names the oldest"
        + " open transaction)";
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
   * With exactly-once delivery a batch is the next events in commit order, whatever their keys, and
   * the events {@code delivered} covers (the broker holds them from before) are passed, not sent.
   */
  private void stream(ReplicationSession session, StreamProgress delivered) throws SQLException {
    TransactionAssembler assembler = new TransactionAssembler(
        settings.messagePrefix(), settings.tables().schema(), settings.tables().outboxName());
    PendingEvents pending = new PendingEvents();
    PublishPipeline.Flight flight = null;
    Duration pause = Pacing.MIN_PAUSE;
    passedInSession = 0;
    toldPassed = false;
    while (running) {
      boolean progress = read(session, assembler, pending, flight, delivered);
      if (flight != null && flight.answered()) {
        pipeline.settle(flight, pipeline.await(flight, session::sendStatus, settings.statusInterval()));
        flight = null;
        progress = true;
        // Told before the next batch leaves, not with the next status update: a relay killed now
        // sends again at most that batch, not all it has acknowledged since the last update.
        if (confirm(session, pending, assembler)) {
          session.sendStatus();
        }
      }
      if (flight == null) {
        flight = submitNext(pending);
        progress |= flight != null;
      }
      confirm(session, pending, assembler);
      if (progress) {
        pause = Pacing.MIN_PAUSE;
      } else if (flight != null) {
        pipeline.waitBriefly(flight, settings.idleInterval());
      } else {
        pacing.pause(pacing.untilDue(pending, pause));
        pause = pacing.longer(pause);
      }
    }
    if (flight != null) { // a graceful stop settles and confirms the batch in hand
      pipeline.settle(flight, pipeline.await(flight, session::sendStatus, settings.statusInterval()));
      confirm(session, pending, assembler);
    }
    session.sendStatus();
  }

  /** Hands the next sendable batch to the broker; {@code null} when none is sendable. */
  private PublishPipeline.Flight submitNext(PendingEvents pending) {
    if (transactions == null) {
      List<PendingEvents.Entry> batch = pending.sendable(clock.instant(), settings.batchSize());
      return batch.isEmpty() ? null : pipeline.submit(batch, null, null);
    }
    List<PendingEvents.Entry> batch = pending.sendableInOrder(clock.instant(), settings.batchSize());
    return batch.isEmpty() ? null : pipeline.submit(batch, batch.get(batch.size() - 1).place(), null);
  }

  /** Confirms the end of the finished transactions at the head; returns whether the position moved. */
  private boolean confirm(ReplicationSession session, PendingEvents pending, TransactionAssembler assembler) {
    long before = session.confirmed();
    if (assembler.sawWalMessages() && !walMessagesSeen) {
      // Kept at once, not with the next checkpoint: a failover before that would otherwise find a
      // slot that never carried WAL messages, and lose them without a word.
      calls.run(committing("that slot " + settings.slot() + " carries WAL messages"), () -> {
        checkpoints.noteWalMessages();
        return null;
      });
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
    report(pending);
    return session.confirmed() != before;
  }

  /**
   * Reads what has arrived, but stops at the end of a transaction when the broker holds nothing of
   * this relay's or has answered: a steady stream never runs dry, and reading on would hold back
   * what is ready to send. While a batch is with the broker, reading on gathers the next one.
   */
  private boolean read(ReplicationSession session, TransactionAssembler assembler, PendingEvents pending,
      PublishPipeline.Flight flight, StreamProgress delivered) throws SQLException {
    boolean any = false;
    while (pending.size() < settings.maxPending()) {
      ByteBuffer data = session.readPending();
      if (data == null) {
        break;
      }
      any = true;
      Optional<CommittedTransaction> committed = assembler.accept(session.lastReceived(), data);
      if (committed.isPresent()) {
        notePassed(committed.get(), pending.add(committed.get(), delivered, rowsDelivered(committed.get())));
        if (flight == null || flight.answered()) {
          break;
        }
      }
    }
    return any;
  }

  /**
   * Counts the events passed because they were delivered before (the broker holds them, or the
   * slot's checkpoint covers their rows), and logs how many once the first event that was not
   * arrives: what the restart or the failover did not send twice.
   */
  private void notePassed(CommittedTransaction committed, int passed) {
    passedInSession += passed;
    if (passed < committed.events().size() && passedInSession > 0 && !toldPassed) {
      log.info("slot {}: passed {} event(s) read again from the slot that were delivered before (the broker's"
          + " exactly-once place holds them, or the slot's checkpoint covers their rows)", settings.slot(),
          passedInSession);
      toldPassed = true;
    }
  }

  /** Keeps what the status shows of the events in hand. */
  private void report(PendingEvents pending) {
    oldestPending = pending.oldestCommitTime();
    pendingCount = pending.size();
  }

  private void confirm(ReplicationSession session, long lsn) {
    session.confirm(lsn);
    confirmedLsn = session.confirmed();
  }
}
