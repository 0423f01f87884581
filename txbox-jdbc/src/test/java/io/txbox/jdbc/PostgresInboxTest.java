package io.txbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.Inbox;
import io.txbox.Inbox.Receipt;
import io.txbox.InboxHandler;
import io.txbox.Message;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PostgresInboxTest {
  private TestDatabase db;
  private Inbox inbox;
  private final AtomicInteger handlerRuns = new AtomicInteger();

  @BeforeEach
  void createSchema() throws SQLException {
    db = TestDatabase.create();
    PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build().migrate();
    inbox = Inbox.create(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build());
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + db.schema() + ".side_effect (consumer text, message_id uuid)");
    }
  }

  @AfterEach
  void dropSchema() {
    db.close();
  }

  /** The side effect: a row written on the inbox's connection, in its transaction. */
  private InboxHandler writeSideEffect(String consumer) {
    return (tx, message, key) -> {
      handlerRuns.incrementAndGet();
      try (PreparedStatement p = tx.prepareStatement(
          "INSERT INTO " + db.schema() + ".side_effect (consumer, message_id) VALUES (?, ?)")) {
        p.setString(1, consumer);
        p.setObject(2, message.id());
        p.executeUpdate();
      }
    };
  }

  private static Message message() {
    return Message.builder().type("OrderPlaced").destination("orders").key("o-1").payload(new byte[] {1}).build();
  }

  private int count(String table) throws SQLException {
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + db.schema() + "." + table)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  @Test
  void aMessageIsProcessedOnceAndItsRedeliveryIsADuplicate() throws SQLException {
    Message m = message();
    assertThat(inbox.receive("inventory", m, writeSideEffect("inventory"))).isEqualTo(Receipt.PROCESSED);
    assertThat(inbox.receive("inventory", m, writeSideEffect("inventory"))).isEqualTo(Receipt.DUPLICATE);
    assertThat(handlerRuns).hasValue(1);
    assertThat(count("side_effect")).isEqualTo(1);
    assertThat(count("txbox_inbox")).isEqualTo(1);
  }

  @Test
  void aHandlerThatThrowsRecordsNothingAndTheRedeliveryIsProcessed() throws SQLException {
    Message m = message();
    InboxHandler crashesAfterItsWrite = (tx, message, key) -> {
      writeSideEffect("inventory").handle(tx, message, key);
      throw new IllegalStateException("crash inside the handler");
    };
    assertThatThrownBy(() -> inbox.receive("inventory", m, crashesAfterItsWrite))
        .isInstanceOf(IllegalStateException.class).hasMessage("crash inside the handler");
    assertThat(count("side_effect")).isZero();
    assertThat(count("txbox_inbox")).isZero();

    assertThat(inbox.receive("inventory", m, writeSideEffect("inventory"))).isEqualTo(Receipt.PROCESSED);
    assertThat(count("side_effect")).isEqualTo(1);
  }

  @Test
  void aCheckedHandlerFailureIsWrappedAndNamesTheConsumerAndMessage() {
    Message m = message();
    assertThatThrownBy(() -> inbox.receive("billing", m, (tx, message, key) -> {
      throw new java.io.IOException("payment API down");
    }))
        .isInstanceOf(Inbox.HandlerException.class)
        .hasMessageContaining("consumer billing failed on message " + m.id())
        .hasMessageContaining("payment API down");
  }

  @Test
  void twoConsumersOfOneMessageEachProcessItOnce() throws SQLException {
    Message m = message();
    for (int delivery = 0; delivery < 3; delivery++) {
      inbox.receive("inventory", m, writeSideEffect("inventory"));
      inbox.receive("loyalty", m, writeSideEffect("loyalty"));
    }
    assertThat(handlerRuns).hasValue(2);
    assertThat(count("side_effect")).isEqualTo(2);
  }

  @Test
  void concurrentDeliveriesOfOneMessageRunTheHandlerOnce() throws Exception {
    Message m = message();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Callable<Receipt>> deliveries = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        deliveries.add(() -> inbox.receive("inventory", m, writeSideEffect("inventory")));
      }
      List<Receipt> receipts = new ArrayList<>();
      for (Future<Receipt> f : pool.invokeAll(deliveries)) {
        receipts.add(f.get());
      }
      assertThat(receipts).containsOnlyOnce(Receipt.PROCESSED);
      assertThat(handlerRuns).hasValue(1);
      assertThat(count("side_effect")).isEqualTo(1);
    } finally {
      pool.shutdown();
    }
  }

  @Test
  void theIdempotencyKeyIsStablePerConsumerAndDiffersBetweenConsumers() throws SQLException {
    Message m = message();
    List<String> keys = new ArrayList<>();
    assertThatThrownBy(() -> inbox.receive("inventory", m, (tx, message, key) -> {
      keys.add(key);
      throw new IllegalStateException("first delivery fails");
    })).isInstanceOf(IllegalStateException.class);
    inbox.receive("inventory", m, (tx, message, key) -> keys.add(key));
    inbox.receive("loyalty", m, (tx, message, key) -> keys.add(key));
    assertThat(keys).hasSize(3);
    assertThat(keys.get(1)).isEqualTo(keys.get(0)).isEqualTo(Inbox.idempotencyKey("inventory", m.id()));
    assertThat(keys.get(2)).isNotEqualTo(keys.get(0));
  }

  @Test
  void aConsumerNameThatCannotBeStoredIsRefusedByName() {
    assertThatThrownBy(() -> inbox.receive("in ventory", message(), writeSideEffect("x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("consumer must be 1 to 100 characters of A-Z a-z 0-9 . _ -, was 'in ventory'");
  }

  @Test
  void aRollbackThatFailsTooKeepsTheHandlersOwnErrorAndRecordsNothing() throws SQLException {
    InboxHandler killsItsConnection = (tx, message, key) -> {
      try (Statement s = tx.createStatement()) {
        s.execute("SELECT pg_terminate_backend(pg_backend_pid())");
      }
    };
    Message m = message();
    assertThatThrownBy(() -> inbox.receive("c", m, killsItsConnection))
        .as("the handler's error, not the rollback's")
        .isInstanceOf(SQLException.class)
        .hasMessageContaining("terminat")
        .satisfies(e -> assertThat(e.getSuppressed()).isNotEmpty());
    assertThat(count("txbox_inbox")).isZero();
  }
}
