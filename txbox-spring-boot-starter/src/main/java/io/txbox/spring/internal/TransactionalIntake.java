package io.txbox.spring.internal;

import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.spi.InboxStore;
import io.txbox.spi.Intake;
import io.txbox.spring.MessageHandler;
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
  public boolean take(Message message) throws Exception {
    try {
      return Boolean.TRUE.equals(transactions.execute(status -> recordAndHandle(message)));
    } catch (Failed e) {
      throw e.cause; // rolled back; the subscriber logs the handler's own error and retries
    }
  }

  private boolean recordAndHandle(Message message) {
    try {
      if (!store.record(DataSourceUtils.getConnection(dataSource), consumer, message.id())) {
        return false; // a redelivery: nothing was written, the commit is empty
      }
      handler.handle(message, Inbox.idempotencyKey(consumer, message.id()));
      return true;
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new Failed(e); // checked: unchecked so that the template rolls back
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
