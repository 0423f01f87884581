package io.txbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.cdc.LogicalReplication;
import io.txbox.cdc.WalOutboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.SettableClock;
import io.txbox.testkit.TestDatabase;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class SlotMetersTest {

  @Test
  void theGaugesShowTheWalASlotWithoutARelayHoldsBack() throws Exception {
    try (EmbeddedPostgres postgres = EmbeddedPostgres.builder().setServerConfig("wal_level", "logical").start();
        var pool = TestDatabase.pool(postgres.getJdbcUrl("postgres", "postgres"), 2)) {
      LogicalReplication replication =
          LogicalReplication.builder(pool, PostgresOutboxStore.builder(pool).build()).build();
      replication.migrate();
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      SettableClock clock = new SettableClock(Instant.parse("2026-11-24T10:00:00Z"));
      SlotMeters.builder(replication).refresh(Duration.ofSeconds(10)).clock(clock).build().bindTo(registry);
      double before = registry.get("txbox.slot.lag").gauge().value();

      Outbox outbox = Outbox.create(WalOutboxStore.create());
      try (Connection c = pool.getConnection()) {
        c.setAutoCommit(false);
        for (int i = 0; i < 100; i++) {
          outbox.send(c, Message.builder().destination("d").type("T").payload(new byte[1000]).build());
        }
        c.commit();
      }
      assertThat(registry.get("txbox.slot.lag").gauge().value()).as("kept until the refresh").isEqualTo(before);
      clock.advance(Duration.ofSeconds(10));
      assertThat(registry.get("txbox.slot.lag").gauge().value()).isGreaterThan(before + 100_000);
      assertThat(registry.get("txbox.slot.retained").gauge().value()).isGreaterThan(100_000);
      assertThat(registry.get("txbox.slot.active").gauge().value()).isZero();
      assertThat(registry.get("txbox.slot.invalidated").gauge().value()).isZero();
      assertThat(registry.get("txbox.slot.lag").gauge().getId().getTag("slot")).isEqualTo("txbox");
    }
  }
}
