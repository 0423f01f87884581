package io.txbox.spring.internal;

import io.txbox.spi.CurrentTransaction;
import java.sql.Connection;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The Spring-managed transaction the calling thread is in, on the application's DataSource: the
 * connection a {@code DataSourceTransactionManager} or {@code JpaTransactionManager} bound to it.
 */
public final class SpringTransaction implements CurrentTransaction {
  private final DataSource dataSource;

  public SpringTransaction(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  @Override
  public Connection connection() {
    if (!TransactionSynchronizationManager.isActualTransactionActive()) {
      throw new IllegalStateException("Outbox.send(message) was called outside a transaction: call it"
          + " from a @Transactional method or inside TransactionTemplate.execute, so that the event"
          + " commits or rolls back with the business writes it describes");
    }
    if (!TransactionSynchronizationManager.hasResource(dataSource)) {
      throw new IllegalStateException("Outbox.send(message) was called in a transaction that is not"
          + " on the DataSource txbox writes to: run it under a transaction manager for that DataSource"
          + " (Spring Boot's DataSourceTransactionManager or JpaTransactionManager), or name the"
          + " transaction manager in @Transactional(\"...\")");
    }
    // Bound to the transaction: the transaction manager commits and releases it, not the caller.
    return DataSourceUtils.getConnection(dataSource);
  }
}
