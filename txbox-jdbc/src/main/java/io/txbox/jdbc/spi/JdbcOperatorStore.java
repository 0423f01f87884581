package io.txbox.jdbc.spi;

import io.txbox.jdbc.DeadLetters;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.Replay;
import io.txbox.jdbc.StoreStatus;
import io.txbox.jdbc.internal.JdbcDeadLetters;
import io.txbox.jdbc.internal.JdbcReplay;
import io.txbox.spi.RelayStore;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.List;
import javax.sql.DataSource;

/**
 * The operators' part of a table outbox, one implementation for every database: status, dead
 * letters, replays and the database's own migration. Backlogs and the oldest open transaction
 * are counted by the relay's part, as the relays' meters count them.
 *
 * <pre>{@code
 * OperatorStore operator = new JdbcOperatorStore(dataSource, new JdbcOperatorStore.Parts(tables, dialect,
 *     logKey, "txbox_outbox", status, relayStore, migration));
 * }</pre>
 */
public final class JdbcOperatorStore implements OperatorStore {
  private final DataSource dataSource;
  private final Parts parts;
  private final Transactions tx;

  /**
   * A database's migration: renders its versions as SQL from the store's settings alone, and
   * applies the missing ones to a database.
   */
  public interface Migration {
    /** Applies the versions not applied yet to {@code dataSource}'s database; how many it applied. */
    int run(DataSource dataSource);

    /** Every version as SQL; reads no database. */
    List<MigrationScript> scripts();
  }

  /**
   * What differs between databases.
   *
   * @param outboxTable the outbox table's name as writers with plain SQL give it
   * @param relayPart what counts backlogs and finds the oldest open transaction
   */
  public record Parts(TableNames tables, SqlDialect dialect, LogKey logKey, String outboxTable, JdbcStatus status,
      RelayStore relayPart, Migration migration) {}

  public JdbcOperatorStore(DataSource dataSource, Parts parts) {
    this.dataSource = dataSource;
    this.parts = parts;
    this.tx = new Transactions(dataSource);
  }

  /** The database's name and the outbox table, such as {@code shop.public.txbox_outbox}. */
  @Override
  public String outboxName() {
    String database = tx.inTransaction("reading the database's name", c -> {
      try (PreparedStatement p = c.prepareStatement("SELECT " + parts.dialect().currentDatabase());
          ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    });
    return database + "." + parts.outboxTable();
  }

  @Override
  public String outboxTable() {
    return parts.outboxTable();
  }

  @Override
  public int migrate() {
    return parts.migration().run(dataSource);
  }

  @Override
  public List<MigrationScript> migrationScripts() {
    return parts.migration().scripts();
  }

  @Override
  public StoreStatus status(int limitPerBucket) {
    RelayStore relay = parts.relayPart();
    return parts.status().read(tx, subscription -> relay.backlog(subscription, limitPerBucket),
        relay::oldestOpenTransaction);
  }

  @Override
  public List<StoreStatus.Minute> writtenPerMinute(int minutes) {
    if (minutes < 1 || minutes > MAX_MINUTES) {
      throw new IllegalArgumentException("minutes must be between 1 and " + MAX_MINUTES + ", was " + minutes);
    }
    return parts.status().writtenPerMinute(tx, minutes);
  }

  @Override
  public DeadLetters deadLetters() {
    return new JdbcDeadLetters(dataSource, parts.tables(), parts.dialect());
  }

  @Override
  public Replay replay() {
    return new JdbcReplay(dataSource, parts.tables(), parts.dialect(), parts.logKey());
  }
}
