package io.txbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txbox.Janitor;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.TestDatabase;
import java.lang.ref.WeakReference;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class JanitorMetersTest {
  private TestDatabase db;
  private PostgresOutboxStore store;
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  @BeforeEach
  void createSchema() {
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(4).build();
    store.migrate();
  }

  @AfterEach
  void dropSchema() {
    db.close();
  }

  @Test
  void removedRowsFailedRunsAndTheLastSuccessAreShown() throws Exception {
    Janitor janitor = Janitor.builder(store.janitor()).outboxRetention(Duration.ofDays(1)).build();
    new JanitorMeters(janitor).bindTo(registry); // and no reference kept, as txbox relay keeps none
    assertThat(failures()).as("there before the first failure").isZero();
    assertThat(lastSuccess()).isNaN();
    collectGarbage(); // the meters must not freeze when the binder is collected

    store.relay().openSubscription("default");
    for (int i = 0; i < 3; i++) {
      try (Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        Outbox.create(store.writer()).send(c, Message.builder().type("T").key("k" + i).destination("d").payload(new byte[] {1})
            .createdAt(Instant.now().minus(Duration.ofDays(2))).build());
        c.commit();
      }
    }
    // the subscription relayed everything: each bucket's checkpoint at its last event
    db.execute("UPDATE {s}.txbox_subscription s SET (tx_id, position) = (SELECT o.tx_id, o.position"
        + " FROM {s}.txbox_outbox o WHERE o.bucket = s.bucket ORDER BY o.tx_id DESC, o.position DESC LIMIT 1)"
        + " WHERE EXISTS (SELECT 1 FROM {s}.txbox_outbox o WHERE o.bucket = s.bucket)");
    assertThat(janitor.runOnce().outboxEvents()).isEqualTo(3);
    assertThat(registry.get("txbox.janitor.deleted").tag("table", "outbox").functionCounter().count()).isEqualTo(3);
    assertThat(lastSuccess()).isCloseTo(Instant.now().getEpochSecond(), org.assertj.core.data.Offset.offset(5.0));

    db.close(); // the database goes away
    assertThatThrownBy(janitor::runOnce).isInstanceOf(RuntimeException.class);
    assertThat(failures()).isEqualTo(1);
  }

  /** Runs the collector until a weakly held object is gone: a binder nobody holds would be too. */
  private static void collectGarbage() {
    WeakReference<Object> probe = new WeakReference<>(new Object());
    for (int i = 0; i < 100 && probe.get() != null; i++) {
      System.gc();
    }
    assertThat(probe.get()).as("a collection ran").isNull();
  }

  private double failures() {
    return registry.get("txbox.janitor.failures").functionCounter().count();
  }

  private double lastSuccess() {
    return registry.get("txbox.janitor.last.success").gauge().value();
  }
}
