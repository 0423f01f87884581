package io.txbox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.postgres.internal.PostgresMigration;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/** The outbox table refuses, in the writer's own transaction, a row the relay could not publish. */
class PostgresOutboxRulesTest {
  private static final String INSERT = "INSERT INTO {s}.txbox_outbox (key, type, version, destination, payload,"
      + " content_type, headers) VALUES (%s, %s, %s, %s, '\\x00', %s, %s)";

  private TestDatabase db;

  @BeforeEach
  void migrate() {
    db = TestDatabase.create();
    PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(4).build().migrate();
  }

  @AfterEach
  void drop() {
    db.close();
  }

  @Test
  void aRowThatBreaksARuleIsRefusedNamingTheRuleTheFieldAndWhatWasWrong() {
    assertRefused(row("'k'", "' '", "1", "'d'", "'c'", "'{}'"), "type",
        "txbox_outbox_type_valid: type must be 1 to 255 characters and not blank, was blank");
    assertRefused(row("'k'", "repeat('t', 256)", "1", "'d'", "'c'", "'{}'"), "type",
        "type must be 1 to 255 characters and not blank, was 256 characters");
    assertRefused(row("'k'", "'T'", "0", "'d'", "'c'", "'{}'"), "version",
        "txbox_outbox_version_valid: version must be 1 or more, was 0");
    assertRefused(row("repeat('k', 256)", "'T'", "1", "'d'", "'c'", "'{}'"), "key",
        "txbox_outbox_key_valid: key must be at most 255 characters, was 256");
    assertRefused(row("'k'", "'T'", "1", "E'\\t\\n'", "'c'", "'{}'"), "destination",
        "txbox_outbox_destination_valid: destination must be 1 to 255 characters and not blank, was blank");
    assertRefused(row("'k'", "'T'", "1", "'d'", "''", "'{}'"), "content_type",
        "txbox_outbox_content_type_valid: content_type must be 1 to 255 characters and not blank, was blank");
    assertRefused(row("'k'", "'T'", "1", "'d'", "'c'", "'[1,2]'"), "headers",
        "txbox_outbox_headers_valid: headers must be a JSON object of names and strings, was array");
  }

  @Test
  void aRowAtTheLimitsOfEveryRuleIsWritten() throws SQLException {
    db.execute(row("NULL", "repeat('é', 255)", "1", "repeat('d', 255)", "repeat('ü', 255)", "'{}'"));
    db.execute(row("repeat('k', 255)", "'T'", "2147483647", "'d'", "'c'", "'{\"a\":\"b\"}'"));
    assertThat(db.queryLong("SELECT count(*) FROM {s}.txbox_outbox")).isEqualTo(2);
  }

  @Test
  void anOutboxUpgradedFromVersion7KeepsTheSameRulesInOneCheck() throws SQLException {
    PostgresOutboxStore older = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema())
        .tablePrefix("old_").buckets(4).build();
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      for (var script : older.operator().migrationScripts().subList(0, 7)) { // as an installation of version 7 left it
        s.execute(script.sql());
      }
    }
    assertThat(checks("old_outbox")).hasSize(6);

    assertThat(older.migrate()).isEqualTo(PostgresMigration.latestVersion() - 7);

    assertThat(checks("old_outbox")).containsExactly("old_outbox_valid");
    assertThatThrownBy(() -> db.execute("INSERT INTO {s}.old_outbox (type, destination, payload) VALUES (' ', 'd', '')"))
        .hasMessageContaining("old_outbox_type_valid: type must be 1 to 255 characters and not blank, was blank");
  }

  @Test
  void aWriterMayInsertWhereTheDatabaseGrantsNoFunctionToEveryoneByDefault() throws SQLException {
    String suffix = Integer.toString(ThreadLocalRandom.current().nextInt(1_000_000));
    String owner = "txbox_rules_owner_" + suffix;
    String writer = "txbox_rules_writer_" + suffix;
    db.execute("CREATE ROLE " + owner);
    db.execute("CREATE ROLE " + writer);
    try {
      db.execute("DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO " + owner + "', current_database());"
          + " END $$"); // the first script's CREATE SCHEMA IF NOT EXISTS asks for it
      db.execute("GRANT CREATE, USAGE ON SCHEMA {s} TO " + owner);
      db.execute("GRANT USAGE ON SCHEMA {s} TO " + writer);
      db.execute("ALTER DEFAULT PRIVILEGES FOR ROLE " + owner + " REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC");
      PostgresOutboxStore owned = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema())
          .tablePrefix("owned_").buckets(4).build();
      try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
        c.setAutoCommit(false); // SET LOCAL ROLE: the pooled connection goes back as it came
        s.execute("SET LOCAL ROLE " + owner);
        for (var script : owned.operator().migrationScripts()) {
          s.execute(script.sql());
        }
        s.execute("GRANT INSERT ON " + db.schema() + ".owned_outbox TO " + writer);
        s.execute("SET LOCAL ROLE " + writer);
        s.execute("INSERT INTO " + db.schema() + ".owned_outbox (type, destination, payload) VALUES ('T', 'd', '')");
        c.commit();
      }
      assertThat(db.queryLong("SELECT count(*) FROM {s}.owned_outbox")).isEqualTo(1);
    } finally {
      db.execute("DROP OWNED BY " + owner + ", " + writer + " CASCADE");
      db.execute("DROP ROLE " + owner);
      db.execute("DROP ROLE " + writer);
    }
  }

  private static String row(String key, String type, String version, String destination, String contentType,
      String headers) {
    return INSERT.formatted(key, type, version, destination, contentType, headers);
  }

  private void assertRefused(String insert, String field, String message) {
    assertThatThrownBy(() -> db.execute(insert))
        .isInstanceOfSatisfying(PSQLException.class, e -> {
          ServerErrorMessage error = e.getServerErrorMessage();
          assertThat(error.getSQLState()).as("check_violation").isEqualTo("23514");
          assertThat(error.getConstraint()).isEqualTo("txbox_outbox_valid");
          assertThat(error.getColumn()).isEqualTo(field);
          assertThat(error.getMessage()).endsWith(message);
          assertThat(error.getDetail()).as("a CHECK's error showed the failing row, payload and all").isNull();
        });
  }

  private List<String> checks(String table) throws SQLException {
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT conname FROM pg_constraint WHERE contype = 'c' AND conrelid = '"
            + db.schema() + "." + table + "'::regclass ORDER BY conname")) {
      List<String> names = new ArrayList<>();
      while (rs.next()) {
        names.add(rs.getString(1));
      }
      return names;
    }
  }
}
