package io.txbox.cdc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.Message;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class PendingEventsTest {
  private final Instant now = Instant.parse("2026-11-24T10:00:00Z");

  @Test
  void aKeysEventsShareABatchInOrderAndAFailedOneHoldsItsKeyAlone() {
    PendingEvents pending = new PendingEvents();
    pending.add(tx(100, event(1, "a"), event(2, "b")));
    pending.add(tx(200, event(3, "a"), event(4, "c")));
    List<PendingEvents.Entry> first = pending.sendable(now, 10);
    assertThat(lsns(first)).containsExactly(1L, 2L, 3L, 4L);
    first.forEach(PendingEvents.Entry::sent);
    first.get(0).failed(1, now.plusSeconds(5));
    first.get(1).done();
    first.get(2).heldBack(); // sent behind the failed one of its key
    first.get(3).done();
    assertThat(pending.sendable(now, 10)).isEmpty(); // key a waits for its retry; nothing else is left
    assertThat(pending.confirmable()).isEmpty(); // the head transaction holds the failed event
    assertThat(pending.nextDue()).isEqualTo(now.plusSeconds(5));
    List<PendingEvents.Entry> retry = pending.sendable(now.plusSeconds(5), 10);
    assertThat(lsns(retry)).containsExactly(1L, 3L);
    assertThat(retry.get(0).attempts()).isEqualTo(1);
    assertThat(retry.get(0).failures()).isEqualTo(1);
    assertThat(retry.get(1).attempts()).isZero();
    assertThat(retry.get(1).failures()).isZero();
    retry.forEach(PendingEvents.Entry::done);
    assertThat(pending.confirmable()).hasValue(200);
  }

  @Test
  void aKeyWithAnEventInFlightSendsNoOther() {
    PendingEvents pending = new PendingEvents();
    pending.add(tx(100, event(1, "a")));
    pending.sendable(now, 10).forEach(PendingEvents.Entry::sent);
    pending.add(tx(200, event(2, "a"), event(3, "b")));
    assertThat(lsns(pending.sendable(now, 10))).containsExactly(3L);
  }

  @Test
  void onlyAPrefixOfFinishedTransactionsIsConfirmed() {
    PendingEvents pending = new PendingEvents();
    pending.add(tx(100, event(1, "a")));
    pending.add(tx(200, event(2, "b")));
    pending.add(tx(300, event(3, "c")));
    List<PendingEvents.Entry> all = pending.sendable(now, 10);
    all.get(0).done();
    all.get(2).done();
    assertThat(pending.confirmable()).hasValue(100);
    all.get(1).done();
    assertThat(pending.confirmable()).hasValue(300);
    assertThat(pending.isEmpty()).isTrue();
    assertThat(pending.size()).isZero();
  }

  @Test
  void eventsWithoutAKeyAreOrderedWithNothing() {
    PendingEvents pending = new PendingEvents();
    pending.add(tx(100, event(1, null), event(2, null)));
    assertThat(lsns(pending.sendable(now, 10))).containsExactly(1L, 2L);
  }

  @Test
  void theBatchIsBoundedAndKeepsCommitOrder() {
    PendingEvents pending = new PendingEvents();
    pending.add(tx(100, event(1, "a"), event(2, "b"), event(3, "c")));
    assertThat(lsns(pending.sendable(now, 2))).containsExactly(1L, 2L);
  }

  @Test
  void inOrderABatchEndsAtTheFirstEventThatWaitsWhateverItsKey() {
    PendingEvents pending = new PendingEvents();
    pending.add(tx(100, event(1, "a"), event(2, "b")));
    pending.add(tx(200, event(3, "c")));
    List<PendingEvents.Entry> first = pending.sendableInOrder(now, 10);
    assertThat(lsns(first)).containsExactly(1L, 2L, 3L);
    first.forEach(PendingEvents.Entry::sent);
    first.get(0).done();
    first.get(1).failed(1, now.plusSeconds(5));
    first.get(2).heldBack(); // its transaction was aborted: sent again
    assertThat(pending.sendableInOrder(now, 10)).as("c waits behind b, though its key is another").isEmpty();
    assertThat(pending.sendable(now, 10)).as("per key, c would go on").hasSize(1);
    assertThat(lsns(pending.sendableInOrder(now.plusSeconds(5), 10))).containsExactly(2L, 3L);
  }

  @Test
  void eventsTheBrokerHoldsArePassedUpToTheTransactionAndEventItNames() {
    PendingEvents pending = new PendingEvents();
    StreamProgress delivered = new StreamProgress(200, 1);
    assertThat(pending.add(tx(100, event(1, "a")), delivered, false)).isOne();
    assertThat(pending.add(tx(200, event(2, "a"), event(3, "a")), delivered, false)).isOne();
    assertThat(pending.add(tx(300, event(4, "a")), delivered, false)).isZero();
    List<PendingEvents.Entry> batch = pending.sendableInOrder(now, 10);
    assertThat(lsns(batch)).containsExactly(3L, 4L);
    assertThat(batch.get(0).place()).isEqualTo(new StreamProgress(200, 2));
    assertThat(batch.get(1).place()).isEqualTo(new StreamProgress(300, 1));
    assertThat(pending.confirmable()).hasValue(100);
  }

  @Test
  void theRowsOfATransactionTheCheckpointCoversArePassedAndItsWalMessagesAreNot() {
    PendingEvents pending = new PendingEvents();
    assertThat(pending.add(tx(100, event(1, "a").asRow(), event(2, "b")), StreamProgress.NONE, true)).isOne();
    assertThat(lsns(pending.sendableInOrder(now, 10))).containsExactly(2L);
  }

  private static CommittedTransaction tx(long end, StreamEvent... events) {
    return new CommittedTransaction(1, end, Instant.EPOCH, List.of(events));
  }

  private static StreamEvent event(long lsn, String key) {
    return StreamEvent.of(lsn, Message.builder().destination("d").type("T").key(key).payload(new byte[0]).build());
  }

  private static List<Long> lsns(List<PendingEvents.Entry> entries) {
    return entries.stream().map(e -> e.event().lsn()).toList();
  }
}
