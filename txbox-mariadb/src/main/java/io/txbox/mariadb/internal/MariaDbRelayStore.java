package io.txbox.mariadb.internal;

import io.txbox.jdbc.spi.JdbcRelayStore;
import io.txbox.jdbc.spi.Transactions;
import io.txbox.spi.Backlog;
import io.txbox.spi.OpenTransaction;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The relay's part of the MariaDB outbox: the shared {@link JdbcRelayStore} over MariaDB's
 * statements, reading up to the {@link CommitHorizon} that the writer epochs prove.
 * {@link io.txbox.mariadb.MariaDbOutboxStore} hands its {@link io.txbox.spi.OutboxStore} calls here.
 */
public final class MariaDbRelayStore extends JdbcRelayStore {
  private final CommitHorizon horizon;
  private final MariaDbStatus status;

  public MariaDbRelayStore(DataSource dataSource, MariaDbTables tables) {
    this(dataSource, tables, MariaDbSql.of(tables));
  }

  private MariaDbRelayStore(DataSource dataSource, MariaDbTables tables, MariaDbSql sql) {
    super(dataSource, tables, MariaDbDialect.INSTANCE, sql.relay());
    this.horizon = new CommitHorizon(sql, new Transactions(dataSource));
    this.status = new MariaDbStatus(dataSource, tables);
  }

  /** {@inheritDoc} Moves the {@link CommitHorizon} first. */
  @Override
  protected long committedUpTo() {
    return horizon.advance();
  }

  /** {@inheritDoc} Counts at most {@code limitPerBucket} events per bucket, on the clustered key's range. */
  @Override
  public Optional<Backlog> backlog(String subscription, int limitPerBucket) {
    return Optional.of(status.backlog(subscription, limitPerBucket));
  }

  /**
   * {@inheritDoc}
   *
   * <p>On MariaDB: the oldest other transaction in {@code information_schema.INNODB_TRX} that has
   * modified rows, what the relay's stall warning names; its {@code pid} is the connection id that
   * {@code KILL} takes. Seeing other users' transactions takes the {@code PROCESS} privilege;
   * without it, none is found and the warning stays silent.
   */
  @Override
  public Optional<OpenTransaction> oldestOpenTransaction() {
    return status.oldestOpenTransaction();
  }
}
