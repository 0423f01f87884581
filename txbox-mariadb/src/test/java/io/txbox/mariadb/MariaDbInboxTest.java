package io.txbox.mariadb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.HandlerException;
import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.spi.InboxStore;
import io.txbox.testkit.InboxContract;
import io.txbox.testkit.TestMariaDb;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** The MariaDB inbox held to the inbox contract, which the PostgreSQL inbox passes too. */
class MariaDbInboxTest extends InboxContract {
  private TestMariaDb db;
  private final MariaDbInboxStore store = MariaDbInboxStore.builder().build();

  @Override
  protected DataSource freshDatabase() {
    db = TestMariaDb.create();
    MariaDbOutboxStore.builder(db.dataSource()).build().migrate();
    return db.dataSource();
  }

  @Override
  protected InboxStore store() {
    return store;
  }

  @Override
  protected String table(String name) {
    return name;
  }

  @Override
  protected boolean waitingOnALock(String table) throws SQLException {
    // INNODB_TRX is refreshed at most every 100 ms, which the caller's polling absorbs.
    try (Connection c = db.dataSource().getConnection(); PreparedStatement p = c.prepareStatement(
        "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'"
            + " AND trx_query LIKE CONCAT('%', ?, '%')")) {
      p.setString(1, table);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getInt(1) > 0;
      }
    }
  }

  @Override
  protected void ageInboxRecords(Duration age) throws SQLException {
    db.execute("UPDATE txbox_inbox SET received_at = UTC_TIMESTAMP(6) - INTERVAL " + age.toSeconds() + " SECOND");
  }

  @Override
  protected Janitor janitor(Duration inboxRetention) {
    return Janitor.builder(MariaDbOutboxStore.builder(db.dataSource()).build().janitor()).inboxRetention(inboxRetention).build();
  }

  @Override
  protected void dropDatabase() {
    db.close();
  }

  private static Message message() {
    return Message.builder().type("OrderPlaced").destination("orders").key("o-1").payload(new byte[] {1}).build();
  }

  @Test
  void aServiceWhoseTablesWereNeverCreatedIsToldToRunMigrate() {
    try (TestMariaDb bare = TestMariaDb.create()) {
      Inbox consumerOnly = Inbox.create(bare.dataSource(), store);
      assertThatThrownBy(() -> consumerOnly.receive("inventory", message(), (tx, m, key) -> { }))
          .isInstanceOf(SQLException.class).hasMessageContaining("txbox's tables are missing")
          .hasMessageContaining("txbox_inbox").hasMessageContaining("MariaDbOutboxStore.migrate()");
    }
  }

  @Test
  void aRollbackThatFailsTooKeepsTheHandlersOwnErrorAndRecordsNothing() throws SQLException {
    InboxHandler killsItsConnection = (tx, message, key) -> {
      try (Statement s = tx.createStatement()) {
        s.execute("KILL CONNECTION_ID()");
      }
    };
    assertThatThrownBy(() -> inbox().receive("c", message(), killsItsConnection))
        .as("the handler's error, not the rollback's")
        .isInstanceOf(HandlerException.class)
        .hasCauseInstanceOf(SQLException.class)
        .hasMessageContaining("Connection was killed")
        .satisfies(e -> assertThat(e.getSuppressed()).isNotEmpty());
    assertThat(db.queryLong("SELECT COUNT(*) FROM txbox_inbox")).isZero();
  }

  @Test
  void aDuplicateIsAbsorbedQuietlyWithoutAServerErrorTheDriverWouldLog() throws Exception {
    Message m = message();
    inbox().receive("billing", m, (tx, msg, key) -> { });
    PrintStream console = System.err;
    ByteArrayOutputStream logged = new ByteArrayOutputStream();
    System.setErr(new PrintStream(logged, true, StandardCharsets.UTF_8)); // where slf4j-simple writes
    try {
      for (int i = 0; i < 3; i++) {
        assertThat(inbox().receive("billing", m, (tx, msg, key) -> { }).toString()).contains("DUPLICATE");
      }
    } finally {
      System.setErr(console);
    }
    assertThat(logged.toString(StandardCharsets.UTF_8)).as("normal operation, as on PostgreSQL")
        .doesNotContain("1062", "Duplicate entry");
  }

  @Test
  void theJanitorDeletesProcessedRecordsPastTheRetentionAndKeepsTheYoungOnes() throws SQLException {
    Message old = message();
    inbox().receive("billing", old, (tx, m, key) -> { });
    ageInboxRecords(Duration.ofDays(30));
    inbox().receive("billing", message(), (tx, m, key) -> { });

    assertThat(janitor(Duration.ofDays(1)).runOnce().inboxRecords()).isEqualTo(1);

    assertThat(db.queryLong("SELECT COUNT(*) FROM txbox_inbox")).isEqualTo(1);
  }
}
