package io.txbox.spi;

import io.txbox.DeadLetter;
import java.util.List;

/**
 * Where a relay that reads its events from elsewhere than the outbox table (the logical relay
 * reads the write-ahead log) keeps the events it gives up on: each letter carries its whole
 * event, since the table may no longer hold it. A store implements it beside {@link OutboxStore},
 * so that such a relay needs nothing else of the store.
 *
 * <pre>{@code
 * DeadLetterSink sink = postgresOutboxStore;
 * sink.saveDeadLetterCopies(List.of(letter)); // one transaction; throws when it cannot
 * }</pre>
 */
@FunctionalInterface
public interface DeadLetterSink {

  /**
   * Writes the letters in one transaction; a letter already saved for the same subscription and
   * position is kept as it is, so that a relay reading the same events again writes nothing twice.
   *
   * @throws RuntimeException when they could not be written: the caller reads the events again
   */
  void saveDeadLetterCopies(List<DeadLetter> letters);
}
