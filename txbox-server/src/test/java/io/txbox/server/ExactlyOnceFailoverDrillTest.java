package io.txbox.server;

import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.PostgresNode;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Exactly-once drill 5, for the table relay: a PostgreSQL primary with a synchronous standby, both
 * the test's own, and two relays and a writer that reach whichever is the primary through one
 * two-host URL. Mid-drain the primary is stopped as a crash would stop it and the standby
 * promoted. The relays' database checkpoints on the new primary are whatever the standby had;
 * Kafka's are the truth, and the relays read them back. Every outbox row the new primary holds is
 * read once by a read_committed consumer, in order per key.
 */
@FaultDrill
class ExactlyOnceFailoverDrillTest extends OwnServerExactlyOnceDrill {
  private PostgresNode primary;
  private PostgresNode standby;

  @BeforeEach
  void setUp() {
    primary = PostgresNode.primary(PostgresNode.debianBinaries(15), Map.of("max_connections", "200"));
    standby = primary.standby("standby1", false, Map.of());
    primary.set(Map.of("synchronous_standby_names", "standby1")); // a commit returns once the standby has it
    createOutbox();
  }

  @AfterEach
  void tearDown() {
    standby.close();
    primary.close();
  }

  @Override
  String url() {
    return PostgresNode.jdbcUrl("postgres", primary, standby);
  }

  @Test
  void aFailoverToASynchronousStandbyMidDrainDeliversEveryEventTheNewPrimaryHoldsOnce() throws Exception {
    drainThrough("failover drill", () -> {
      primary.stopImmediately();
      standby.promote();
    });
  }
}
