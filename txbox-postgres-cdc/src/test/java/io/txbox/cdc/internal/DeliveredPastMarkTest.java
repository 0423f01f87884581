package io.txbox.cdc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.entry;

import io.txbox.Message;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class DeliveredPastMarkTest {
  private static final long EPOCH = 3L << 32; // full ids past a wraparound: the stream's 32 bits need widening
  private final Instant now = Instant.parse("2026-11-30T10:00:00Z");

  @Test
  void theNoteNamesEveryTransactionDeliveredWithItsCommitsEndAndTheOneDeliveredInPart() {
    DeliveredPastMark delivered = new DeliveredPastMark();
    delivered.restore(null, EPOCH + 100);
    delivered.delivered(batch(tx(101, 1, 1), tx(102, 2, 2), tx(104, 3, 1)), now);
    DeliveredPastMark.Note note = DeliveredPastMark.parse(delivered.note());
    assertThat(note.recent()).as("each id to the end of its commit record")
        .containsExactly(entry(EPOCH + 101, 101L), entry(EPOCH + 102, 104L), entry(EPOCH + 104, 108L));
    assertThat(note.partialXid()).as("the last transaction, one of its three events delivered").isEqualTo(EPOCH + 104);
    assertThat(note.partialRows()).isOne();
    assertThat(note.deliveredWhole(EPOCH + 102)).isTrue();
    assertThat(note.deliveredWhole(EPOCH + 103)).isFalse();
    assertThat(note.deliveredWhole(EPOCH + 104)).as("in part").isFalse();
    assertThat(note.complete()).isTrue();
    assertThat(delivered.asNote()).as("what the note says, without writing and reading it").isEqualTo(note);

    delivered.delivered(batch(tx(104, 3, 3)), now); // the rest of it
    assertThat(DeliveredPastMark.parse(delivered.note()).partialXid()).isZero();
  }

  @Test
  void recentTransactionsAreWrittenAsDifferencesSoAFullNoteStaysSmall() {
    DeliveredPastMark delivered = new DeliveredPastMark();
    delivered.restore(null, EPOCH + 100);
    List<Tx> txs = new ArrayList<>();
    for (int i = 0; i < DeliveredPastMark.MAX_RECENT - 2; i++) {
      txs.add(tx(101 + i, 1, 1));
    }
    txs.add(tx(90, 1, 1)); // commit order is not id order: an id below the one before
    txs.add(tx(91, 1, 1));
    // past 28 GB of WAL, each commit about 600 bytes after the one before
    delivered.delivered(batch(7L << 32, 600, txs.toArray(Tx[]::new)), now);
    String note = delivered.note();
    assertThat(DeliveredPastMark.parse(note)).as("read back as it was").isEqualTo(delivered.asNote());
    assertThat(DeliveredPastMark.parse(note).recent()).hasSize(DeliveredPastMark.MAX_RECENT)
        .containsKeys(EPOCH + 90, EPOCH + 91);
    assertThat(note.length()).as("4 or 5 characters a transaction, not about 20").isLessThan(
        5 * DeliveredPastMark.MAX_RECENT);
  }

  @Test
  void aNoteOfTheSecondLayoutIsReadItsRecentTransactionsInFull() {
    DeliveredPastMark.Note note = DeliveredPastMark.parse("2|5-9|12@500,11@520|400|11:2|c");
    assertThat(note.recent()).containsExactly(entry(12L, 500L), entry(11L, 520L));
    assertThat(note.heldUpTo(510).deliveredWhole(12)).isTrue();
    assertThat(note.heldUpTo(510).partialXid()).as("committed past the replay's end").isZero();
  }

  @Test
  void pastItsRecentTransactionsItKeepsRangesOfIdsAndTheirLatestCommitsEnd() {
    DeliveredPastMark delivered = new DeliveredPastMark();
    delivered.restore(null, EPOCH + 100);
    List<Tx> txs = new ArrayList<>();
    for (int i = 0; i <= DeliveredPastMark.MAX_RECENT + 1; i++) {
      txs.add(tx(101 + i, 1, 1));
    }
    delivered.delivered(batch(txs.toArray(Tx[]::new)), now);
    DeliveredPastMark.Note note = DeliveredPastMark.parse(delivered.note());
    assertThat(note.ranges()).as("the two oldest, joined").containsExactly(entry(EPOCH + 101, EPOCH + 102));
    assertThat(note.rangesThrough()).isEqualTo(103L);
    assertThat(note.recent()).hasSize(DeliveredPastMark.MAX_RECENT);
    assertThat(note.deliveredWhole(EPOCH + 101)).isTrue();
  }

  @Test
  void aServerThatReplayedUpToAPointHoldsOnlyTheTransactionsCommittedBeforeIt() {
    DeliveredPastMark delivered = new DeliveredPastMark();
    delivered.restore(null, EPOCH + 100);
    delivered.delivered(batch(tx(101, 1, 1), tx(102, 1, 1), tx(103, 2, 1)), now); // commits end at 101, 103, 106
    DeliveredPastMark.Note note = delivered.asNote();

    DeliveredPastMark.Note held = note.heldUpTo(103);
    assertThat(held.deliveredWhole(EPOCH + 102)).as("its commit ends at the replay's end").isTrue();
    assertThat(held.recent()).containsOnlyKeys(EPOCH + 101, EPOCH + 102);
    assertThat(held.partialXid()).as("the transaction delivered in part is not there either").isZero();
    assertThat(note.heldUpTo(106)).as("a server that has it all").isEqualTo(note);
  }

  @Test
  void rangesWhoseLatestCommitIsPastTheReplaysEndAreDroppedWholeSentAgainNotLost() {
    DeliveredPastMark.Note note = DeliveredPastMark.parse("2|5-9|12@500|400||c");
    assertThat(note.heldUpTo(450).deliveredWhole(7)).isTrue();
    DeliveredPastMark.Note held = note.heldUpTo(350);
    assertThat(held.deliveredWhole(7)).isFalse();
    assertThat(held.recent()).isEmpty();
  }

  @Test
  void aNoteOfTheFirstLayoutIsReadItsRangesHeldAnywhere() {
    DeliveredPastMark.Note note = DeliveredPastMark.parse("1|5-9,12|12:3|c");
    assertThat(note.ranges()).containsExactly(entry(5L, 9L), entry(12L, 12L));
    assertThat(note.recent()).isEmpty();
    assertThat(note.partialXid()).isEqualTo(12);
    assertThat(note.heldUpTo(1).deliveredWhole(7)).as("no commit ends known: as before").isTrue();
  }

  @Test
  void aCheckpointWrittenForgetsWhatItCoversButTheTransactionsItSawOpen() {
    DeliveredPastMark delivered = new DeliveredPastMark();
    delivered.restore(null, EPOCH + 100);
    delivered.delivered(batch(tx(101, 1, 1), tx(102, 1, 1), tx(103, 1, 1), tx(110, 1, 1)), now);
    delivered.covered(new SlotCheckpoints.Candidate(EPOCH + 105, new long[] {EPOCH + 102}, 0, 1, now));
    assertThat(DeliveredPastMark.parse(delivered.note()).recent()).containsOnlyKeys(EPOCH + 102, EPOCH + 110);
  }

  @Test
  void aNoteReadBackIsWhereANewStreamerGoesOnAndGarbageIsRefused() {
    DeliveredPastMark first = new DeliveredPastMark();
    first.restore(null, EPOCH);
    first.delivered(batch(tx(7, 2, 1)), now);
    DeliveredPastMark next = new DeliveredPastMark();
    next.restore(first.note(), EPOCH);
    assertThat(next.note()).isEqualTo(first.note());
    assertThatThrownBy(() -> DeliveredPastMark.parse("<script>")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("did not write");
    assertThat(DeliveredPastMark.parse(null)).isEqualTo(DeliveredPastMark.Note.NONE);
  }

  @Test
  void beyondItsRangesItSaysItIsIncompleteUntilACheckpointTakenLaterIsWritten() {
    DeliveredPastMark delivered = new DeliveredPastMark();
    delivered.restore(null, EPOCH);
    List<PendingEvents.Entry> many = new ArrayList<>();
    for (int i = 0; i <= DeliveredPastMark.MAX_RANGES + DeliveredPastMark.MAX_RECENT; i++) {
      many.addAll(batch(tx(2 * i + 1, 1, 1))); // every other id: no range joins another
    }
    delivered.delivered(many, now);
    assertThat(DeliveredPastMark.parse(delivered.note()).complete()).isFalse();
    assertThat(delivered.note().length()).isLessThan(io.txbox.spi.TransactionalPublisher.MAX_NOTE_CHARS);
    delivered.covered(new SlotCheckpoints.Candidate(EPOCH + 10, new long[0], 0, 1, now.minusSeconds(1)));
    assertThat(DeliveredPastMark.parse(delivered.note()).complete()).as("taken before the last unrecorded").isFalse();
    delivered.covered(new SlotCheckpoints.Candidate(EPOCH + 10, new long[0], 0, 1, now.plusSeconds(1)));
    assertThat(DeliveredPastMark.parse(delivered.note()).complete()).isTrue();
  }

  @Test
  void a32BitIdIsWidenedToTheFullIdNearestTheReference() {
    assertThat(DeliveredPastMark.widen(EPOCH + 5, 3)).isEqualTo(EPOCH + 3);
    assertThat(DeliveredPastMark.widen(EPOCH + 5, 0xFFFF_FFF0L)).as("just before the wraparound")
        .isEqualTo(EPOCH - 16);
    assertThat(DeliveredPastMark.widen(EPOCH - 3, 2)).as("just after it").isEqualTo(EPOCH + 2);
  }

  /** A transaction's events as the stream gives them: 32-bit id, its event count, how many of them. */
  private record Tx(long xid, int size, int taken) {}

  private static Tx tx(long xid, int size, int taken) {
    return new Tx(xid, size, taken);
  }

  private static List<PendingEvents.Entry> batch(Tx... txs) {
    return batch(100, 1, txs);
  }

  /** Transactions whose events follow one another from {@code firstLsn}, each commit {@code gap} past its last. */
  private static List<PendingEvents.Entry> batch(long firstLsn, long gap, Tx... txs) {
    PendingEvents pending = new PendingEvents();
    List<PendingEvents.Entry> all = new ArrayList<>();
    long lsn = firstLsn;
    for (Tx t : txs) {
      List<StreamEvent> events = new ArrayList<>();
      for (int i = 0; i < t.size; i++) {
        events.add(StreamEvent.of(lsn++, Message.builder().destination("d").type("T").payload(new byte[0]).build())
            .asRow());
      }
      lsn += gap - 1;
      pending.add(new CommittedTransaction(t.xid & 0xFFFF_FFFFL, lsn++, Instant.EPOCH, events));
    }
    for (PendingEvents.Entry e : pending.sendableInOrder(Instant.EPOCH, Integer.MAX_VALUE)) {
      all.add(e);
    }
    // keep only the first 'taken' events of each transaction
    List<PendingEvents.Entry> taken = new ArrayList<>();
    int index = 0;
    for (Tx t : txs) {
      taken.addAll(all.subList(index, index + t.taken));
      index += t.size;
    }
    return taken;
  }
}
