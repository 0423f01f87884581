package io.txbox.server;

import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.PostgresNode;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Exactly-once drill 4: the database crashes (an immediate shutdown, no checkpoint) and restarts
 * while two table relays drain, on a PostgreSQL server of the test's own. Every event the database
 * kept (every outbox row after recovery, whether or not its writer saw the commit return) is read
 * once by a read_committed consumer, in order per key.
 */
@FaultDrill
class ExactlyOnceDatabaseCrashDrillTest extends OwnServerExactlyOnceDrill {
  private PostgresNode node;

  @BeforeEach
  void setUp() {
    node = PostgresNode.primary(PostgresNode.debianBinaries(15), Map.of());
    createOutbox();
  }

  @AfterEach
  void tearDown() {
    node.close();
  }

  @Override
  String url() {
    return node.jdbcUrl("postgres");
  }

  @Test
  void aDatabaseCrashAndRestartMidDrainDeliversEveryEventItKeptOnce() throws Exception {
    drainThrough("database crash drill", () -> {
      node.stopImmediately();
      node.start(); // crash recovery from the WAL
    });
  }
}
