package io.txbox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.HandlerException;
import io.txbox.Inbox;
import io.txbox.InboxHandler;
import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.spi.InboxStore;
import io.txbox.testkit.InboxContract;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** The PostgreSQL inbox held to the inbox contract, and what only PostgreSQL shows. */
class PostgresInboxTest extends InboxContract {
  private TestDatabase db;
  private PostgresInboxStore store;

  @Override
  protected DataSource freshDatabase() {
    db = database();
    PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build().migrate();
    store = PostgresInboxStore.builder().schema(db.schema()).build();
    return db.dataSource();
  }

  /** Where the inbox's tables are, and how it connects; the test database, directly, here. */
  TestDatabase database() {
    return TestDatabase.create();
  }

  @Override
  protected InboxStore store() {
    return store;
  }

  @Override
  protected String table(String name) {
    return db.schema() + "." + name;
  }

  @Override
  protected boolean waitingOnALock(String table) throws SQLException {
    try (Connection c = db.dataSource().getConnection(); PreparedStatement p = c.prepareStatement(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position(? in query) > 0")) {
      p.setString(1, table);
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        return rs.getInt(1) > 0;
      }
    }
  }

  @Override
  protected void ageInboxRecords(Duration age) throws SQLException {
    try (Connection c = db.dataSource().getConnection(); PreparedStatement p = c.prepareStatement(
        "UPDATE " + table("txbox_inbox") + " SET received_at = now() - ? * interval '1 millisecond'")) {
      p.setLong(1, age.toMillis());
      p.executeUpdate();
    }
  }

  @Override
  protected Janitor janitor(Duration inboxRetention) {
    return Janitor.builder(PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build().janitor())
        .inboxRetention(inboxRetention).build();
  }

  @Override
  protected void dropDatabase() {
    db.close();
  }

  private static Message message() {
    return Message.builder().type("OrderPlaced").destination("orders").key("o-1").payload(new byte[] {1}).build();
  }

  private static InboxHandler writeNothing() {
    return (tx, message, key) -> { };
  }

  private int count(String table) throws SQLException {
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  @Test
  void aServiceWhoseTablesWereNeverCreatedIsToldToRunMigrate() throws SQLException {
    try (TestDatabase bare = TestDatabase.create()) {
      Inbox consumerOnly = Inbox.create(bare.dataSource(), PostgresInboxStore.builder().schema(bare.schema()).build());
      assertThatThrownBy(() -> consumerOnly.receive("inventory", message(), writeNothing()))
          .isInstanceOf(SQLException.class).hasMessageContaining("txbox's tables are missing")
          .hasMessageContaining("txbox_inbox").hasMessageContaining("PostgresOutboxStore.migrate()")
          .hasMessageContaining("--schema " + bare.schema());
      Outbox producer = Outbox.create(PostgresOutboxStore.builder(bare.dataSource()).schema(bare.schema()).build().writer());
      try (Connection tx = bare.dataSource().getConnection()) {
        tx.setAutoCommit(false);
        assertThatThrownBy(() -> producer.send(tx, message())).isInstanceOf(SQLException.class)
            .hasMessageContaining("txbox's tables are missing").hasMessageContaining("txbox_outbox");
      }
    }
  }

  @Test
  void aRollbackThatFailsTooKeepsTheHandlersOwnErrorAndRecordsNothing() throws SQLException {
    InboxHandler killsItsConnection = (tx, message, key) -> {
      try (Statement s = tx.createStatement()) {
        s.execute("SELECT pg_terminate_backend(pg_backend_pid())");
      }
    };
    Message m = message();
    assertThatThrownBy(() -> inbox().receive("c", m, killsItsConnection))
        .as("the handler's error, not the rollback's")
        .isInstanceOf(HandlerException.class)
        .hasCauseInstanceOf(SQLException.class)
        .hasMessageContaining("terminat")
        .satisfies(e -> assertThat(e.getSuppressed()).isNotEmpty());
    assertThat(count(table("txbox_inbox"))).isZero();
  }


}
