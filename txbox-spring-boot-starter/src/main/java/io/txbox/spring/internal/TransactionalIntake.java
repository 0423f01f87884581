package io.txbox.spring.internal;

import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.spi.InboxStore;
import io.txbox.spi.Intake;
import io.txbox.spi.Retries;
import io.txbox.spring.MessageHandler;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Takes a message in a Spring transaction: records it in the inbox on the transaction's connection
 * and runs the handler in the same transaction, so everything the handler does through Spring
 * (JdbcTemplate, JPA, {@code @Transactional} services) commits with the record or not at all.
 */
public final class TransactionalIntake implements Intake {
  private final String consumer;
  private final MessageHandler handler;
  private final InboxStore store;
  private final DataSource dataSource;
  private final TransactionTemplate transactions;

  public TransactionalIntake(
      String consumer, MessageHandler handler, InboxStore store, DataSource dataSource, TransactionTemplate transactions) {
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
  public Inbox.Receipt take(Message message) throws Exception {
    try {
      return transactions.execute(status -> admitAndHandle(message));
    } catch (Failed e) {
      throw e.cause; // rolled back; the subscriber logs the error and retries
    }
  }

  @Override
  public boolean deadLetter(Message message, Throwable error, int attempts) throws Exception {
    try {
      transactions.executeWithoutResult(status -> {
        try {
          store.deadLetter(DataSourceUtils.getConnection(dataSource), consumer, message, attempts, Retries.describe(error));
        } catch (SQLException e) {
          throw new Failed(e);
        }
      });
      return true;
    } catch (Failed e) {
      throw e.cause;
    }
  }

  private Inbox.Receipt admitAndHandle(Message message) {
    InboxStore.Admission admission;
    try {
      admission = store.admit(DataSourceUtils.getConnection(dataSource), consumer, message);
    } catch (SQLException e) {
      throw new Failed(e);
    }
    switch (admission) {
      case DUPLICATE:
        return Inbox.Receipt.DUPLICATE; // a redelivery: nothing was written, the commit is empty
      case PARKED:
        return Inbox.Receipt.PARKED;
      default:
        break;
    }
    try {
      handler.handle(message, Inbox.idempotencyKey(consumer, message.id()));
      return Inbox.Receipt.PROCESSED;
    } catch (Exception | Error e) {
      // unchecked, so that the template rolls back; counts toward the retry policy giving up
      throw Inbox.HandlerException.of(consumer, message, e);
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
