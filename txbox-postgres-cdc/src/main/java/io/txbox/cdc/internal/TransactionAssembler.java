package io.txbox.cdc.internal;

import io.txbox.cdc.WalEnvelope;
import io.txbox.postgres.OutboxRowText;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Turns the decoded stream into committed transactions of outbox events: WAL messages with the
 * relay's prefix and inserts into the outbox table. Anything a writer put there that is not a
 * valid event becomes an unreadable {@link StreamEvent}, one at a time, so that it is
 * dead-lettered and nothing else stops.
 */
public final class TransactionAssembler {
  private final String messagePrefix;
  private final String outboxSchema;
  private final String outboxTable;
  private final Map<Integer, PgOutput.Relation> relations = new HashMap<>();
  private List<StreamEvent> open;
  private long openXid;
  private boolean walMessages;

  /**
   * @param messagePrefix the prefix of the WAL messages that are events
   * @param outboxSchema the schema of the outbox table
   * @param outboxTable the outbox table's name, without the schema
   */
  public TransactionAssembler(String messagePrefix, String outboxSchema, String outboxTable) {
    this.messagePrefix = messagePrefix;
    this.outboxSchema = outboxSchema;
    this.outboxTable = outboxTable;
  }

  /**
   * Takes the next message of the stream, received at {@code lsn}; returns a transaction when
   * this message committed one that holds events.
   */
  public Optional<CommittedTransaction> accept(long lsn, ByteBuffer data) {
    PgOutput.Decoded decoded = PgOutput.decode(data);
    if (decoded instanceof PgOutput.Begin begin) {
      open = new ArrayList<>();
      openXid = begin.xid();
    } else if (decoded instanceof PgOutput.Commit commit) {
      List<StreamEvent> events = open;
      open = null;
      if (events != null && !events.isEmpty()) {
        return Optional.of(new CommittedTransaction(openXid, commit.endLsn(), commit.commitTime(), events));
      }
    } else if (decoded instanceof PgOutput.WalMessage message && message.prefix().equals(messagePrefix)) {
      walMessages = true;
      StreamEvent event = walEvent(message);
      if (message.transactional() && open != null) {
        open.add(event);
      } else {
        // Written with transactional = false: sent whether or not its transaction commits, so it
        // stands alone, at its own position.
        return Optional.of(new CommittedTransaction(0, message.lsn(), null, List.of(event)));
      }
    } else if (decoded instanceof PgOutput.Relation relation) {
      relations.put(relation.id(), relation);
    } else if (decoded instanceof PgOutput.Insert insert && open != null) {
      PgOutput.Relation relation = relations.get(insert.relationId());
      if (relation != null && relation.namespace().equals(outboxSchema) && relation.name().equals(outboxTable)) {
        open.add(rowEvent(lsn, relation, insert));
      }
    }
    return Optional.empty();
  }

  /** Whether any event read so far was a WAL message: one that no table holds. */
  public boolean sawWalMessages() {
    return walMessages;
  }

  /** Whether a transaction has begun and not yet committed in what was read so far. */
  public boolean inTransaction() {
    return open != null;
  }

  private static StreamEvent walEvent(PgOutput.WalMessage message) {
    try {
      return StreamEvent.of(message.lsn(), WalEnvelope.decode(message.content()));
    } catch (IllegalArgumentException e) {
      return StreamEvent.unreadable(message.lsn(), message.content(), "application/x-txbox-wal-envelope",
          "WAL message at " + Lsn.format(message.lsn()) + ": " + e.getMessage());
    }
  }

  private static StreamEvent rowEvent(long lsn, PgOutput.Relation relation, PgOutput.Insert insert) {
    InsertedRow row = new InsertedRow(relation, insert);
    try {
      return StreamEvent.of(lsn, OutboxRowText.message(row)).asRow();
    } catch (IllegalArgumentException e) {
      return StreamEvent.unreadable(lsn, row.describe(), "text/plain; charset=utf-8",
          "outbox row at " + Lsn.format(lsn) + ": " + e.getMessage()).asRow();
    }
  }
}
