package io.txbox;

import io.txbox.internal.LocalTransaction;
import io.txbox.spi.InboxStore;
import io.txbox.spi.InboxStore.Admission;
import io.txbox.spi.support.Rollback;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns at-least-once delivery into effectively-once processing: each message is processed by a
 * consumer once, however often the broker delivers it.
 *
 * <p>{@link #receive} opens a transaction, records {@code (consumer, message id)}, runs the handler
 * on the same connection, and commits; only then does it return, so the caller acknowledges the
 * broker after the side effects are durable. A message the consumer already processed is a
 * {@link Receipt#DUPLICATE}: the handler does not run, and the caller acknowledges it too.
 * Deduplication is per consumer: two consumers of one message each process it once.
 *
 * <pre>{@code
 * Inbox inbox = Inbox.create(dataSource, PostgresInboxStore.builder().build());
 * Receipt receipt = inbox.receive("inventory", message, (tx, m, key) -> reserveStock(tx, m));
 * consumer.acknowledge(record); // after receive returned, processed, duplicate or parked
 * }</pre>
 *
 * <p><b>Dead letters, sequenced per key.</b> A message the handler cannot process ({@link
 * #deadLetter}, which subscribers call when their {@link RetryPolicy} gives up) is kept as dead,
 * and its key is parked: every later message of the key is stored behind it ({@link
 * Receipt#PARKED}), so the key keeps its order while other keys flow. After the fix, {@link
 * #retry} processes the key's messages in order; {@link #discard} drops them. An operator without
 * the handler ({@code txbox dead-letters retry --consumer}) {@linkplain #requestRetry requests} a
 * retry instead, which the running subscriber carries out ({@link #runRetryRequests}).
 *
 * <p>Thread-safe; one instance serves every consumer of the application.
 */
public final class Inbox {
  private static final Pattern CONSUMER = Pattern.compile("[A-Za-z0-9._-]{1,100}");
  /** Longest consumer name, see {@link #requireConsumerName}. */
  public static final int MAX_CONSUMER_LENGTH = 100;
  /** Most parked messages {@link #parked} lists at once. */
  public static final int MAX_PARKED_LISTED = 10_000;
  /** Most retry requests {@link #runRetryRequests} takes in one call. */
  public static final int RETRY_REQUESTS_PER_RUN = 100;
  private static final Logger log = LoggerFactory.getLogger(Inbox.class);

  private final DataSource dataSource;
  private final InboxStore store;

  private Inbox(DataSource dataSource, InboxStore store) {
    this.dataSource = dataSource;
    this.store = store;
  }

  /** An inbox that opens its transactions on {@code dataSource} and records in {@code store}. */
  public static Inbox create(DataSource dataSource, InboxStore store) {
    return new Inbox(
        Objects.requireNonNull(dataSource, "dataSource must not be null"),
        Objects.requireNonNull(store, "store must not be null"));
  }

  /**
   * Processes {@code message} for {@code consumer} once: records it and runs the handler in one
   * transaction, then commits. When the handler throws, the transaction is rolled back, nothing
   * is recorded, and the handler's exception is thrown wrapped in a {@link HandlerException}.
   *
   * @param consumer the consumer's name, 1-100 of {@code A-Z a-z 0-9 . _ -}
   * @throws SQLException when the database fails; nothing was recorded
   */
  public Receipt receive(String consumer, Message message, InboxHandler handler) throws SQLException {
    requireConsumerName(consumer);
    Objects.requireNonNull(message, "message must not be null");
    Objects.requireNonNull(handler, "handler must not be null");
    try (Connection tx = begin()) {
      try {
        Admission admission = store.admit(tx, consumer, message);
        if (admission == Admission.NEW) {
          handle(tx, consumer, message, handler);
        }
        tx.commit();
        return admission.receipt();
      } catch (SQLException | RuntimeException e) {
        Rollback.after(tx, e);
        throw e;
      }
    }
  }

  /**
   * Processes {@code messages} for {@code consumer} in one transaction: each is admitted as by
   * {@link #receive} and, when new, handled, in the order given; then one commit. One commit per
   * batch instead of per message is what makes a consumer fast: the commit's WAL flush is most of
   * a small handler's cost.
   *
   * <p>All or nothing: when a handler throws, the whole transaction is rolled back, nothing is
   * recorded, and a {@link HandlerException} naming the failed message is thrown; the caller goes
   * on one message at a time ({@link #receive}), so the messages before the failed one are handled
   * again and the failed one gets its retries. No savepoint per message: more than 64
   * subtransactions in one transaction overflow PostgreSQL's per-backend cache of them, which
   * slows every snapshot in the cluster while the transaction is open.
   *
   * @return one receipt per message, in the order given
   * @throws SQLException when the database fails; nothing was recorded
   */
  public List<Receipt> receiveAll(String consumer, List<Message> messages, InboxHandler handler) throws SQLException {
    Objects.requireNonNull(handler, "handler must not be null");
    return receiveAll(consumer, messages, (tx, fresh) -> {
      for (Message m : fresh) {
        handle(tx, consumer, m, handler);
      }
    });
  }

  /**
   * {@link #receiveAll(String, List, InboxHandler)} with a handler that takes the batch's new
   * messages at once. When it throws, nothing is recorded and a {@link BatchHandlerException} is
   * thrown, which names no message: take them again one at a time ({@link
   * InboxBatchHandler#oneAtATime()}) to find the one that fails.
   */
  public List<Receipt> receiveAll(String consumer, List<Message> messages, InboxBatchHandler handler)
      throws SQLException {
    requireConsumerName(consumer);
    Objects.requireNonNull(messages, "messages must not be null");
    Objects.requireNonNull(handler, "handler must not be null");
    if (messages.isEmpty()) {
      return List.of();
    }
    try (Connection tx = begin()) {
      try {
        List<Admission> admissions = store.admitAll(tx, consumer, messages);
        List<Message> fresh = new ArrayList<>(messages.size());
        List<Receipt> receipts = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
          if (admissions.get(i) == Admission.NEW) {
            fresh.add(messages.get(i));
          }
          receipts.add(admissions.get(i).receipt());
        }
        if (!fresh.isEmpty()) {
          handleAll(tx, consumer, fresh, handler);
        }
        tx.commit();
        return receipts;
      } catch (SQLException | RuntimeException e) {
        Rollback.after(tx, e);
        throw e;
      }
    }
  }

  private static void handleAll(Connection tx, String consumer, List<Message> messages, InboxBatchHandler handler) {
    try {
      handler.handle(tx, messages);
    } catch (HandlerException e) {
      throw e; // from the one-message-at-a-time form above, naming its message
    } catch (Exception | Error e) {
      throw BatchHandlerException.of(consumer, messages.size(), e);
    }
  }

  /**
   * Keeps {@code message} as dead for {@code consumer} after {@code attempts} failed attempts
   * ending in {@code error}, and parks its key, in a transaction of its own. The caller then
   * acknowledges the message to the broker.
   *
   * @return false when the consumer had the message already; nothing changed
   * @throws SQLException when the database fails; nothing was stored, so do not acknowledge
   */
  public boolean deadLetter(String consumer, Message message, Throwable error, int attempts) throws SQLException {
    requireConsumerName(consumer);
    Objects.requireNonNull(message, "message must not be null");
    Objects.requireNonNull(error, "error must not be null");
    return inTransaction(tx -> store.deadLetter(tx, consumer, message, Math.max(1, attempts), InboxStore.describe(error)));
  }

  /** Up to {@code limit} (at most {@value #MAX_PARKED_LISTED}) parked messages of {@code consumer}, by key, in order. */
  public List<ParkedMessage> parked(String consumer, int limit) throws SQLException {
    requireConsumerName(consumer);
    if (limit < 1 || limit > MAX_PARKED_LISTED) {
      throw new IllegalArgumentException("limit must be between 1 and " + MAX_PARKED_LISTED + ", was " + limit);
    }
    return inTransaction(tx -> store.parked(tx, consumer, limit));
  }

  /**
   * Processes the parked messages of {@code queueKey} with {@code handler}, in order, each in a
   * transaction of its own; the key is free again once none is left. Messages arriving meanwhile
   * queue up behind and are processed too. Stops at the first failure, which is recorded on the
   * message (it stays dead, the key stays parked) and thrown.
   *
   * @param queueKey the message key, or {@link ParkedMessage#queueKey()} for a message without one
   * @return how many messages were processed
   * @throws HandlerException when the handler failed on a parked message
   */
  public int retry(String consumer, String queueKey, InboxHandler handler) throws SQLException {
    requireConsumerName(consumer);
    Objects.requireNonNull(queueKey, "queueKey must not be null");
    Objects.requireNonNull(handler, "handler must not be null");
    int processed = 0;
    while (retryNext(consumer, queueKey, handler)) {
      processed++;
    }
    return processed;
  }

  /**
   * Drops the parked messages of {@code queueKey} and frees the key. They stay recorded, so a
   * redelivery of one is a duplicate.
   *
   * @return how many messages were dropped
   */
  public int discard(String consumer, String queueKey) throws SQLException {
    requireConsumerName(consumer);
    Objects.requireNonNull(queueKey, "queueKey must not be null");
    return inTransaction(tx -> store.discardParked(tx, consumer, queueKey));
  }

  /**
   * Asks the running consumer, which has the handler, to retry parked key {@code queueKey}: its
   * subscriber carries the request out within about a second ({@link #runRetryRequests}).
   *
   * @param operator who asks, kept with the request
   * @return false when the key is not parked
   */
  public boolean requestRetry(String consumer, String queueKey, String operator) throws SQLException {
    requireConsumerName(consumer);
    Objects.requireNonNull(queueKey, "queueKey must not be null");
    Objects.requireNonNull(operator, "operator must not be null");
    return inTransaction(tx -> store.requestRetry(tx, consumer, queueKey, operator));
  }

  /**
   * Retries the parked keys of {@code consumer} that an operator {@linkplain #requestRetry asked
   * for}, each with {@link #retry}. A key whose message fails again stays parked (the failure is
   * recorded on the message and logged); the other keys go on. Each request is carried out once,
   * by one instance of the consumer; one taken by an instance that dies before it finished is
   * gone, and the key stays parked, so nothing is lost: ask again.
   *
   * @return how many keys were freed
   */
  public int runRetryRequests(String consumer, InboxHandler handler) throws SQLException {
    requireConsumerName(consumer);
    int freed = 0;
    for (String key : inTransaction(tx -> store.takeRetryRequests(tx, consumer, RETRY_REQUESTS_PER_RUN))) {
      try {
        int processed = retry(consumer, key, handler);
        log.info("consumer {}: retried parked key {} as an operator asked: {} message(s) processed, the key flows"
            + " again", consumer, key, processed);
        freed++;
      } catch (HandlerException e) {
        log.warn("consumer {}: the operator's retry of parked key {} failed again on message {}; the key stays"
            + " parked: {}", consumer, key, e.messageId(), e.getCause() == null ? e : e.getCause().toString());
      }
    }
    return freed;
  }

  /** Processes the key's next parked message; false when none is left. */
  private boolean retryNext(String consumer, String queueKey, InboxHandler handler) throws SQLException {
    ParkedMessage next;
    try (Connection tx = begin()) {
      try {
        Optional<ParkedMessage> parked = store.nextParked(tx, consumer, queueKey);
        if (parked.isEmpty()) {
          tx.commit();
          return false;
        }
        next = parked.get();
        handle(tx, consumer, next.message(), handler);
        store.processedParked(tx, consumer, next.message().id());
        tx.commit();
        return true;
      } catch (HandlerException e) {
        Rollback.after(tx, e);
        UUID id = e.messageId();
        inTransaction(t -> {
          store.failedParked(t, consumer, id, InboxStore.describe(e.getCause()));
          return null;
        });
        throw e;
      } catch (SQLException | RuntimeException e) {
        Rollback.after(tx, e);
        throw e;
      }
    }
  }

  private static void handle(Connection tx, String consumer, Message message, InboxHandler handler) {
    try {
      handler.handle(tx, message, idempotencyKey(consumer, message.id()));
    } catch (Exception | Error e) {
      throw HandlerException.of(consumer, message, e);
    }
  }

  private Connection begin() throws SQLException {
    Connection tx = dataSource.getConnection();
    try {
      tx.setAutoCommit(false);
      return tx;
    } catch (SQLException | RuntimeException e) {
      tx.close();
      throw e;
    }
  }

  private <T> T inTransaction(LocalTransaction.Work<T> work) throws SQLException {
    return LocalTransaction.run(dataSource, work);
  }

  /**
   * The key a handler passes to external systems: the same for a consumer and a message on every
   * delivery, different between consumers. A name-based UUID of both.
   */
  public static String idempotencyKey(String consumer, UUID messageId) {
    return UUID.nameUUIDFromBytes((consumer + "/" + messageId).getBytes(StandardCharsets.UTF_8)).toString();
  }

  /**
   * Checks a consumer's name by the one rule the inbox, the inbox queue, every subscriber and the
   * Spring listeners follow: 1 to {@value #MAX_CONSUMER_LENGTH} characters of A-Z a-z 0-9 . _ -
   * (it is kept in the inbox's rows and named in broker consumer groups and durables).
   *
   * <pre>{@code
   * String consumer = Inbox.requireConsumerName(settings.consumer());
   * }</pre>
   *
   * @return {@code consumer}
   * @throws IllegalArgumentException naming the rule and the value given
   */
  public static String requireConsumerName(String consumer) {
    if (consumer == null || !CONSUMER.matcher(consumer).matches()) {
      throw new IllegalArgumentException("consumer must be 1 to " + MAX_CONSUMER_LENGTH
          + " characters of A-Z a-z 0-9 . _ -, was '" + consumer + "'");
    }
    return consumer;
  }
}
