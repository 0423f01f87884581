package io.txbox.jdbc;

import java.util.List;

/**
 * What operators ask of an outbox: its name, its status, its dead letters, replays, and the schema
 * it needs. {@code txbox status}, {@code dead-letters}, {@code replay}, {@code migrate}, the
 * console and the Spring meters and health take one.
 *
 * <pre>{@code
 * OperatorStore store = PostgresOutboxStore.builder(dataSource).schema("shop").build().operator();
 * StoreStatus status = store.status(10_000);
 * long waiting = store.deadLetters().count(Scope.ALL);
 * }</pre>
 *
 * <p>It is one of the parts a {@link JdbcOutboxStore} hands out, beside the relay's
 * ({@link io.txbox.spi.OutboxStore}: append, and leases, reads, checkpoints) and the janitor's
 * ({@link io.txbox.spi.JanitorStore}: bounded deletes). A store for another database implements
 * the relay's part first, which is all writers and relays need, and the others later.
 */
public interface OperatorStore {

  /** Most minutes {@link #writtenPerMinute} looks back. */
  int MAX_MINUTES = 24 * 60;

  /**
   * The outbox as the meters' {@code outbox} tag names it: database, schema and table, such as
   * {@code shop.public.txbox_outbox}. Asks the database for its name.
   */
  String outboxName();

  /** The qualified name of the outbox table, for writers that insert with plain SQL. */
  String outboxTable();

  /** Creates or upgrades the tables; safe to run twice and from several instances at once. */
  int migrate();

  /**
   * What {@link #migrate()} runs, as SQL for Flyway, Liquibase or a DBA, with this store's names
   * filled in. Reads no database.
   */
  List<MigrationScript> migrationScripts();

  /**
   * Every subscription's backlog and relays, the stalled buckets, the dead letters of the outbox
   * and the inbox, and the oldest open transaction: what {@code txbox status} prints. Counting
   * stops at {@code limitPerBucket} events per bucket.
   */
  StoreStatus status(int limitPerBucket);

  /**
   * Events written per minute over the last {@code minutes} (1 to {@value #MAX_MINUTES}), oldest
   * first, counted from the log: events the janitor already removed are not counted.
   */
  List<StoreStatus.Minute> writtenPerMinute(int minutes);

  /** The dead letters of this outbox: list, show, retry and discard, audited. */
  DeadLetters deadLetters();

  /** Replays of events still in this outbox's log, by scope and at a bounded rate, audited. */
  Replay replay();
}
