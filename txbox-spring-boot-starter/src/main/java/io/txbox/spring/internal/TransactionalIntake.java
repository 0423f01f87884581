package io.txbox.spring.internal;

import io.txbox.HandlerException;
import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.Message;
import io.txbox.ParkedMessage;
import io.txbox.Receipt;
import io.txbox.spi.InboxStore;
import io.txbox.spi.Intake;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Takes a message, or a batch of them, in a Spring transaction: records it in the inbox on the
 * transaction's connection and runs the handler in the same transaction, so everything the handler
 * does through Spring (JdbcTemplate, JPA, {@code @Transactional} services) commits with the record
 * or not at all.
 */
public final class TransactionalIntake implements Intake {
  private static final Logger log = LoggerFactory.getLogger(TransactionalIntake.class);
  private final String consumer;
  private final InboxHandler handler;
  private final InboxStore store;
  private final DataSource dataSource;
  private final TransactionTemplate transactions;

  public TransactionalIntake(
      String consumer, InboxHandler handler, InboxStore store, DataSource dataSource, TransactionTemplate transactions) {
    this.consumer = consumer;
    this.handler = handler;
    this.store = store;
    this.dataSource = dataSource;
    this.transactions = transactions;
  }

  @Override
  public String consumer() {
    return consumer;
  }

  @Override
  public Receipt take(Message message) throws Exception {
    try {
      return transactions.execute(status -> admitAndHandle(message));
    } catch (Failed e) {
      throw e.cause; // rolled back; the subscriber logs the error and retries
    }
  }

  @Override
  public boolean takesBatches() {
    return true;
  }

  /** The messages in one Spring transaction, all or none, as {@link Inbox#receiveAll}. */
  @Override
  public List<Receipt> takeAll(List<Message> messages) throws Exception {
    try {
      return transactions.execute(status -> admitAndHandleAll(messages));
    } catch (Failed e) {
      throw e.cause; // rolled back; the subscriber goes on one message at a time
    }
  }

  @Override
  public boolean deadLetter(Message message, Throwable error, int attempts) throws Exception {
    inTransaction(c -> store.deadLetter(c, consumer, message, attempts, InboxStore.describe(error)));
    return true;
  }

  /** As {@link Inbox#runRetryRequests}, with each parked message handled in a Spring transaction. */
  @Override
  public int runRetryRequests() throws Exception {
    List<String> keys = inTransaction(c -> store.takeRetryRequests(c, consumer, Inbox.RETRY_REQUESTS_PER_RUN));
    int freed = 0;
    for (String key : keys) {
      if (retry(key)) {
        freed++;
      }
    }
    return freed;
  }

  /** Handles the key's parked messages in order, each in a transaction; false when one failed again. */
  private boolean retry(String key) throws Exception {
    while (true) {
      Optional<ParkedMessage> handled;
      try {
        handled = inTransaction(c -> {
          Optional<ParkedMessage> next = store.nextParked(c, consumer, key);
          if (next.isPresent()) {
            handle(c, next.get().message());
            store.processedParked(c, consumer, next.get().message().id());
          }
          return next;
        });
      } catch (HandlerException e) {
        inTransaction(c -> {
          store.failedParked(c, consumer, e.messageId(), InboxStore.describe(e.getCause()));
          return null;
        });
        log.warn("consumer {}: the operator's retry of parked key {} failed again on message {}; the key stays"
            + " parked: {}", consumer, key, e.messageId(), String.valueOf(e.getCause()));
        return false;
      }
      if (handled.isEmpty()) {
        log.info("consumer {}: retried parked key {} as an operator asked; the key flows again", consumer, key);
        return true;
      }
    }
  }

  /** Work on the connection of a Spring transaction. */
  @FunctionalInterface
  private interface Work<T> {
    T run(Connection connection) throws SQLException;
  }

  /** Runs {@code work} in a Spring transaction; a SQLException comes out as itself. */
  private <T> T inTransaction(Work<T> work) throws SQLException {
    try {
      return transactions.execute(status -> {
        try {
          return work.run(DataSourceUtils.getConnection(dataSource));
        } catch (SQLException e) {
          throw new Failed(e);
        }
      });
    } catch (Failed e) {
      throw (SQLException) e.cause;
    }
  }

  private Receipt admitAndHandle(Message message) {
    Connection transaction = DataSourceUtils.getConnection(dataSource);
    InboxStore.Admission admission;
    try {
      admission = store.admit(transaction, consumer, message);
    } catch (SQLException e) {
      throw new Failed(e);
    }
    if (admission == InboxStore.Admission.NEW) {
      handle(transaction, message);
    } // else a redelivery or a parked key: the handler does not run
    return admission.receipt();
  }

  private List<Receipt> admitAndHandleAll(List<Message> messages) {
    Connection transaction = DataSourceUtils.getConnection(dataSource);
    List<InboxStore.Admission> admissions;
    try {
      admissions = store.admitAll(transaction, consumer, messages);
    } catch (SQLException e) {
      throw new Failed(e);
    }
    List<Receipt> receipts = new ArrayList<>(messages.size());
    for (int i = 0; i < messages.size(); i++) {
      if (admissions.get(i) == InboxStore.Admission.NEW) {
        handle(transaction, messages.get(i));
      }
      receipts.add(admissions.get(i).receipt());
    }
    return receipts;
  }

  private void handle(Connection transaction, Message message) {
    try {
      handler.handle(transaction, message, Inbox.idempotencyKey(consumer, message.id()));
    } catch (Exception | Error e) {
      // unchecked, so that the template rolls back; counts toward the retry policy giving up
      throw HandlerException.of(consumer, message, e);
    }
  }

  /** A checked exception carried out of the transaction callback. */
  private static final class Failed extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient Exception cause;

    Failed(Exception cause) {
      super(cause);
      this.cause = cause;
    }
  }
}
