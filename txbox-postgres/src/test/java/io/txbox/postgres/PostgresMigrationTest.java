package io.txbox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.postgres.internal.PostgresMigration;
import io.txbox.testkit.TestDatabase;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Upgrades of txbox's tables on PostgreSQL, from layouts an earlier txbox left behind. */
class PostgresMigrationTest {
  private TestDatabase db;
  private PostgresOutboxStore store;

  @BeforeEach
  void createSchema() {
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build();
  }

  @AfterEach
  void dropSchema() {
    db.close();
  }

  @Test
  void aSlotCheckpointTableMadeBeforeItsLaterColumnsIsGivenThemAndKeepsItsRows() throws Exception {
    store.migrate();
    String table = db.schema() + ".txbox_slot_checkpoint";
    // As LogicalReplication.migrate() made it before schema version 9, with no retrying_* columns,
    // and a relay's checkpoint in it
    db.execute("DROP TABLE " + table);
    db.execute("CREATE TABLE " + table + " (slot text PRIMARY KEY, delivered_below xid8 NOT NULL,"
        + " still_open xid8[] NOT NULL, confirmed_lsn pg_lsn NOT NULL, timeline integer NOT NULL,"
        + " wal_messages boolean NOT NULL DEFAULT false, marked_at timestamptz NOT NULL DEFAULT now())");
    db.execute("INSERT INTO " + table + " (slot, delivered_below, still_open, confirmed_lsn, timeline)"
        + " VALUES ('txbox', '100', '{}', '0/16B3748', 1)");
    db.execute("DELETE FROM " + db.schema() + ".txbox_schema_version WHERE version >= 9"); // as at version 8

    store.migrate();

    assertThat(db.queryLong("SELECT count(*) FROM information_schema.columns WHERE table_schema = '" + db.schema()
        + "' AND table_name = 'txbox_slot_checkpoint' AND column_name IN ('retrying_since', 'retrying_error',"
        + " 'gap_from_lsn', 'gap_found_at')")).as("the columns added since").isEqualTo(4);
    assertThat(db.queryLong("SELECT count(*) FROM " + table + " WHERE slot = 'txbox' AND confirmed_lsn = '0/16B3748'"))
        .as("the relay's checkpoint").isEqualTo(1);
    db.execute("UPDATE " + table + " SET retrying_since = now(), retrying_error = 'x'"); // what the relay writes
  }

  @Test
  void aNewSchemaHasTheSlotCheckpointTableAtVersion9() throws Exception {
    store.migrate();
    assertThat(db.queryLong("SELECT max(version) FROM " + db.schema() + ".txbox_schema_version"))
        .isEqualTo(PostgresMigration.latestVersion());
    assertThat(db.queryLong("SELECT count(*) FROM information_schema.columns WHERE table_schema = '" + db.schema()
        + "' AND table_name = 'txbox_slot_checkpoint'")).isEqualTo(14);
  }

  @Test
  void theOutboxIdIsMadeByTheUpgradeToVersion10AndKeptByEveryLaterMigration() throws Exception {
    store.migrate();
    String setting = db.schema() + ".txbox_setting";
    db.execute("DELETE FROM " + setting + " WHERE name = 'outbox_id'"); // as at version 9
    db.execute("DELETE FROM " + db.schema() + ".txbox_schema_version WHERE version >= 10");
    assertThat(store.relay().outboxId()).isEmpty();

    store.migrate();
    String id = store.relay().outboxId().orElseThrow();
    assertThat(UUID.fromString(id)).as("a UUID").isNotNull();
    db.execute("DELETE FROM " + db.schema() + ".txbox_schema_version WHERE version >= 10");
    store.migrate();
    assertThat(store.relay().outboxId()).as("made once").contains(id);
  }

  @Test
  void relayRowsMadeBeforeVersion11AreGivenNoFencesAndCountThemAfterTheUpgrade() throws Exception {
    store.migrate();
    String table = db.schema() + ".txbox_relay_instance";
    db.execute("ALTER TABLE " + table + " DROP COLUMN fences, DROP COLUMN last_fenced_at"); // as at version 10
    db.execute("DELETE FROM " + db.schema() + ".txbox_schema_version WHERE version >= 11");
    store.relay().heartbeat("default", "relay-1", Duration.ofSeconds(30));

    store.migrate();

    assertThat(db.queryLong("SELECT fences FROM " + table + " WHERE instance = 'relay-1'")).isZero();
    store.relay().recordFence("default", "relay-1");
    assertThat(db.queryLong("SELECT fences FROM " + table + " WHERE instance = 'relay-1'"
        + " AND last_fenced_at > now() - interval '1 minute'")).isEqualTo(1);
  }
}
