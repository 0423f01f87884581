package io.txbox.cdc.internal;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The catch-up from the table: publishes the outbox rows a slot's checkpoint does not cover (read
 * by {@link OutboxCatchUp}), through the same {@link PublishPipeline} as the stream, before the
 * stream starts. {@link SlotRecovery} says when one is due.
 *
 * <p>With exactly-once delivery it first takes the slot's transactional id over at the broker,
 * passes the rows the former stream delivered past the checkpoint (the broker's note), takes up a
 * catch-up stopped halfway where its {@link CatchUpProgress} says, and sends in the catch-up's own
 * order, so that how far it got is always the last row sent.
 */
final class TableCatchUp {
  private static final Logger log = LoggerFactory.getLogger(TableCatchUp.class);

  private final StreamSettings settings;
  private final DataSource dataSource;
  private final PublishPipeline pipeline;
  /** The broker transactions of exactly-once delivery; {@code null} at least once. */
  private final SlotTransactions transactions;
  private final ServerCalls calls;
  private final Pacing pacing;
  private final Clock clock;

  TableCatchUp(StreamSettings settings, DataSource dataSource, PublishPipeline pipeline,
      SlotTransactions transactions, ServerCalls calls, Pacing pacing, Clock clock) {
    this.settings = settings;
    this.dataSource = dataSource;
    this.pipeline = pipeline;
    this.transactions = transactions;
    this.calls = calls;
    this.pacing = pacing;
    this.clock = clock;
  }

  /**
   * Publishes every outbox row {@code from} does not cover, reporting the events in hand after
   * each round.
   *
   * @return the catch-up's snapshot, to write as the slot's checkpoint; empty when stopped first
   *     (the checkpoint stays, and the next start catches up again)
   */
  Optional<SlotCheckpoints.Candidate> run(SlotCheckpoints.Mark from, Consumer<PendingEvents> report)
      throws SQLException {
    DeliveredPastMark.Note delivered = DeliveredPastMark.Note.NONE;
    CatchUpProgress resume = null;
    if (transactions != null) {
      transactions.takeOver(from.deliveredBelow()); // the catch-up's batches are broker transactions too
      delivered = heldHere(transactions.deliveredPastCheckpoint());
      resume = transactions.catchUpFrom(from).orElse(null);
      tellWhatIsTakenOver(delivered, resume);
    }
    try (OutboxCatchUp rows = new OutboxCatchUp(dataSource, settings.tables().outbox(),
        settings.tables().setting(), from, delivered, resume)) {
      return relay(rows, from, report);
    }
  }

  private Optional<SlotCheckpoints.Candidate> relay(OutboxCatchUp rows, SlotCheckpoints.Mark from,
      Consumer<PendingEvents> report) throws SQLException {
    PendingEvents pending = new PendingEvents();
    boolean exhausted = false;
    Duration pause = Pacing.MIN_PAUSE;
    while (pacing.running()) {
      while (!exhausted && pending.size() < settings.maxPending()) {
        List<CommittedTransaction> page = calls.call("the database to read the outbox rows the checkpoint of slot "
            + settings.slot() + " does not cover", () -> rows.next(settings.batchSize()));
        exhausted = page.isEmpty();
        page.forEach(pending::add);
      }
      List<PendingEvents.Entry> batch = nextBatch(pending);
      if (!batch.isEmpty()) {
        PublishPipeline.Flight flight = pipeline.submit(batch, null, transactions == null ? null
            : CatchUpProgress.of(from, rows.snapshot(), batch.get(batch.size() - 1)));
        pipeline.settle(flight, pipeline.await(flight, () -> {}, settings.statusInterval()));
        pause = Pacing.MIN_PAUSE;
      } else if (!pending.isEmpty()) {
        pacing.pause(pacing.untilDue(pending, pause)); // retries and delayed events wait for their time
        pause = pacing.longer(pause);
      }
      pending.confirmable(); // drops what is done
      report.accept(pending);
      if (exhausted && pending.isEmpty()) {
        log.info("slot {}: relayed {} outbox row(s) the checkpoint did not cover, passed {} the former stream had"
            + " delivered; streaming", settings.slot(), rows.read(), rows.passed());
        return Optional.of(rows.snapshot());
      }
    }
    return Optional.empty();
  }

  /**
   * What of the note this server holds. A promoted standby replayed the former primary's WAL up to
   * a point; a transaction the former stream delivered past it is not here, and its id may name a
   * new transaction, whose rows are then relayed, not passed. A server that never recovered says
   * NULL: it is the one the stream read, and holds all of it.
   */
  private DeliveredPastMark.Note heldHere(DeliveredPastMark.Note note) throws SQLException {
    String replayEnd = calls.call("the database to say up to where it replayed WAL before it took writes",
        this::replayEnd);
    if (replayEnd == null) {
      return note;
    }
    DeliveredPastMark.Note held = note.heldUpTo(Lsn.parse(replayEnd));
    int notHere = note.recent().size() - held.recent().size();
    if (notHere > 0) {
      log.warn("slot {}: {} transaction(s) the former stream delivered committed past {}, where this server's"
          + " recovery ended: this server never had them, and rows here with their ids are new ones, relayed",
          settings.slot(), notHere, replayEnd);
    }
    if (!note.ranges().isEmpty() && held.ranges().isEmpty()) {
      log.warn("slot {}: more than {} transactions the former stream delivered committed past {}, where this"
          + " server's recovery ended (was it an asynchronous standby?): the rows of the {} range(s) of older"
          + " ones are sent again rather than risk passing new ones", settings.slot(), DeliveredPastMark.MAX_RECENT,
          replayEnd, note.ranges().size());
    }
    return held;
  }

  private String replayEnd() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_last_wal_replay_lsn()::text")) {
      rs.next();
      return rs.getString(1);
    }
  }

  /** Exactly once, in the catch-up's order: how far it got is then the last row sent. */
  private List<PendingEvents.Entry> nextBatch(PendingEvents pending) {
    return transactions == null
        ? pending.sendable(clock.instant(), settings.batchSize())
        : pending.sendableInOrder(clock.instant(), settings.batchSize());
  }

  private void tellWhatIsTakenOver(DeliveredPastMark.Note delivered, CatchUpProgress resume) {
    if (resume != null) {
      log.info("slot {}: taking up the catch-up from the table that stopped at bucket {}, row {} of transaction {}",
          settings.slot(), resume.bucket(), resume.position(), resume.tx());
    }
    if (!delivered.complete()) {
      log.warn("slot {}: the broker's note of what the former stream delivered past the checkpoint is incomplete"
          + " (more than {} ranges of transactions were delivered between two checkpoints): some of its rows may"
          + " be sent again", settings.slot(), DeliveredPastMark.MAX_RANGES);
    }
  }
}
