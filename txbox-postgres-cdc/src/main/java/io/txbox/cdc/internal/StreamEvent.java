package io.txbox.cdc.internal;

import io.txbox.Message;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

/**
 * One event decoded from the stream: a message, or, when what a writer put there cannot be one,
 * a stand-in that carries the original bytes to the dead-letter table with the reason.
 *
 * @param lsn where the event's WAL record is: unique, so it is the event's position
 * @param message the event, or the stand-in when {@code unreadable} is set
 * @param unreadable why the record is not a valid event; {@code null} when it is
 * @param row whether it is a row of the outbox table, which the table keeps (not a WAL message)
 */
public record StreamEvent(long lsn, Message message, String unreadable, boolean row) {
  /** Type of the stand-in for an unreadable record. */
  public static final String UNREADABLE_TYPE = "txbox.unreadable";

  /** A readable event. */
  public static StreamEvent of(long lsn, Message message) {
    return new StreamEvent(lsn, message, null, false);
  }

  /** An unreadable record; {@code original} is kept as the stand-in's payload. */
  public static StreamEvent unreadable(long lsn, byte[] original, String contentType, String reason) {
    Message standIn = Message.builder()
        .id(UUID.nameUUIDFromBytes(("txbox-lsn-" + lsn).getBytes(StandardCharsets.UTF_8)))
        .type(UNREADABLE_TYPE)
        .destination(UNREADABLE_TYPE)
        .payload(original, contentType)
        .build();
    return new StreamEvent(lsn, standIn, reason, false);
  }

  /** The same event, read from a row of the outbox table. */
  public StreamEvent asRow() {
    return new StreamEvent(lsn, message, unreadable, true);
  }

  /** Whether the record is a valid event. */
  public boolean isReadable() {
    return unreadable == null;
  }
}
