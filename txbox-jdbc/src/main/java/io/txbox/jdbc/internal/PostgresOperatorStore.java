package io.txbox.jdbc.internal;

import io.txbox.jdbc.DeadLetters;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.Replay;
import io.txbox.jdbc.StoreStatus;
import io.txbox.jdbc.sql.JdbcDeadLetters;
import io.txbox.jdbc.sql.JdbcReplay;
import io.txbox.jdbc.support.Transactions;
import io.txbox.spi.OutboxStore;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.List;
import javax.sql.DataSource;

/**
 * The operator's part of the PostgreSQL outbox: status, dead letters, replays and migration.
 * {@link io.txbox.jdbc.PostgresOutboxStore} hands its {@link OperatorStore} calls here.
 */
public final class PostgresOperatorStore implements OperatorStore {
  private final DataSource dataSource;
  private final PostgresTables tables;
  private final Transactions tx;
  private final StatusQueries status;
  private final OutboxStore relayPart;
  private final PostgresMigration migration;

  /** Counts backlogs and the oldest open transaction through {@code relayPart}, as relays' meters do. */
  public PostgresOperatorStore(DataSource dataSource, PostgresTables tables, OutboxStore relayPart,
      PostgresMigration migration) {
    this.dataSource = dataSource;
    this.tables = tables;
    this.tx = new Transactions(dataSource);
    this.status = new StatusQueries(tables);
    this.relayPart = relayPart;
    this.migration = migration;
  }

  @Override
  public String outboxName() {
    String database = tx.inTransaction("reading the database's name", c -> {
      try (PreparedStatement p = c.prepareStatement("SELECT current_database()"); ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    });
    return database + "." + tables.schema() + "." + tables.prefix() + "outbox";
  }

  @Override
  public String outboxTable() {
    return tables.outbox();
  }

  @Override
  public int migrate() {
    return migration.run();
  }

  @Override
  public List<MigrationScript> migrationScripts() {
    return migration.scripts();
  }

  @Override
  public StoreStatus status(int limitPerBucket) {
    return status.read(tx, subscription -> relayPart.backlog(subscription, limitPerBucket),
        relayPart::oldestOpenTransaction);
  }

  @Override
  public List<StoreStatus.Minute> writtenPerMinute(int minutes) {
    if (minutes < 1 || minutes > MAX_MINUTES) {
      throw new IllegalArgumentException("minutes must be between 1 and " + MAX_MINUTES + ", was " + minutes);
    }
    return status.writtenPerMinute(tx, minutes);
  }

  @Override
  public DeadLetters deadLetters() {
    return new JdbcDeadLetters(dataSource, tables, PostgresDialect.INSTANCE);
  }

  @Override
  public Replay replay() {
    return new JdbcReplay(dataSource, tables, PostgresDialect.INSTANCE, PostgresLogKey.INSTANCE);
  }
}
