package io.txbox.spi;

import java.sql.Connection;

/**
 * The connection of the transaction the calling thread is in, as a framework that manages
 * transactions (Spring, Jakarta EE) knows it. It lets {@link io.txbox.Outbox#send(io.txbox.Message)}
 * join that transaction without the caller passing a connection.
 *
 * <pre>{@code
 * CurrentTransaction spring = () -> {
 *   if (!TransactionSynchronizationManager.isActualTransactionActive()) {
 *     throw new IllegalStateException("call outbox.send from a @Transactional method");
 *   }
 *   return DataSourceUtils.getConnection(dataSource);
 * };
 * Outbox outbox = Outbox.builder(store).currentTransaction(spring).build();
 * }</pre>
 */
@FunctionalInterface
public interface CurrentTransaction {

  /**
   * The open transaction's connection, which the caller must neither commit nor close.
   *
   * @throws IllegalStateException when the calling thread is in no transaction, saying how to
   *     open one
   */
  Connection connection();
}
