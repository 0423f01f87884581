package io.txbox.jdbc;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * The outbox's dead letters for operators: list, show, retry and discard them by scope, each
 * change recorded in the audit table with who did it. {@code txbox dead-letters} is built on it.
 *
 * <pre>{@code
 * DeadLetters deadLetters = store.deadLetters();
 * Scope scope = Scope.ALL.withType("OrderPlaced").withErrorContaining("RecordTooLarge");
 * long n = deadLetters.count(scope);
 * deadLetters.retry(scope, "alice");   // back into the log, same ids, in their order
 * }</pre>
 *
 * <p>A retried event re-enters the log as a new row with its id (consumers deduplicate on it), in
 * the order the dead letters had, after whatever its key sent meanwhile; from then on its key's
 * order holds. A row that was dead-lettered because it broke the message rules cannot re-enter:
 * the table's CHECK refuses it, and the retry fails naming the rule.
 */
public interface DeadLetters {

  /** One dead letter, without its payload. */
  record Entry(String subscription, long position, UUID id, String key, String type, int version,
      String destination, String error, int attempts, Instant deadLetteredAt, int payloadBytes) {}

  /** One dead letter with its payload and headers. */
  record Details(Entry entry, byte[] payload, String contentType, String headersJson, Instant createdAt) {}

  /** An operator's action, as the audit table keeps it. */
  record AuditEntry(long id, Instant at, String operator, String action, String target, String scope,
      long count, boolean dryRun) {}

  /** How many dead letters {@code scope} selects. */
  long count(Scope scope);

  /** Up to {@code limit} dead letters of {@code scope}, oldest first. */
  List<Entry> list(Scope scope, int limit);

  /** The dead letter of event {@code id} in {@code subscription}, with its payload. */
  Optional<Details> show(String subscription, UUID id);

  /**
   * Puts the events of {@code scope} back into the log, in their order, with their ids, and
   * removes their dead letters; recorded in the audit table as done by {@code operator}.
   *
   * @return how many events re-entered the log
   */
  int retry(Scope scope, String operator);

  /**
   * Deletes the dead letters of {@code scope}; recorded in the audit table.
   *
   * @return how many were deleted
   */
  int discard(Scope scope, String operator);

  /** Records an operator's action that happened elsewhere, or a dry run, in the audit table. */
  void record(String operator, String action, String target, String scope, long count, boolean dryRun);

  /** The newest {@code limit} audit entries, newest first. */
  List<AuditEntry> audit(int limit);
}
