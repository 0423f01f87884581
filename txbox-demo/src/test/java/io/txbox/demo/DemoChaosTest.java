package io.txbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.NatsServer;
import io.txbox.testkit.RabbitServer;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestMariaDb;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The demo's chaos run against the machine's PostgreSQL and a real broker: orders written as fast
 * as the run needs while relays and inventory services (separate JVMs) are SIGKILLed about every
 * second; and in logical mode, WAL messages streamed from a slot, on an embedded PostgreSQL with
 * {@code wal_level=logical}; and on the machine's MariaDB. Each run is short: what it proves is
 * that every kill loses nothing and applies nothing twice, which a kill a second shows as well as
 * a kill every three. The long run (100,000 orders, a kill every 3 s) is a benchmark: see
 * BENCHMARKS.md, "The chaos demo".
 */
@FaultDrill
class DemoChaosTest {
  /**
   * About how often chaos kills a process. Chaos runs while the orders after the 2 s warm-up are
   * placed, 10 to 11 s in each run, and a kill with its restart takes 4 s at most (the next comes
   * 0.5 to 1.5 s after a restart, which comes 0.5 to 2.5 s after its kill), so the kills fall by
   * 1.5, 5.5 and 9.5 s: every run sees at least three.
   */
  private static final Duration CHAOS_INTERVAL = Duration.ofSeconds(1);

  @Test
  void twentyFourThousandEventsUnderChaosAreAppliedOnceEachAndInOrderPerKey() throws Exception {
    Demo.Settings settings = new Demo.Settings(24_000, 2_000, 50, 4, 2, 2, 2, true, CHAOS_INTERVAL,
        Duration.ofSeconds(2), TestDatabase.jdbcUrl(), Demo.Broker.kafka, KafkaBroker.shared().bootstrapServers(),
        Duration.ofMinutes(5), false, Demo.Source.table, Demo.Database.postgresql);

    DemoReport report = new Demo(settings, System.out).run();
    report.print(System.out);

    assertThat(report.written()).isEqualTo(24_000);
    assertThat(report.kills()).as("processes SIGKILLed by chaos").isGreaterThanOrEqualTo(3);
    assertThat(report.applied()).isEqualTo(24_000);
    assertThat(report.lost()).isZero();
    assertThat(report.appliedTwice()).isZero();
    assertThat(report.orderViolations()).isZero();
    assertThat(report.wrongStockLevels()).isZero();
    assertThat(report.ok()).isTrue();
  }

  @Test
  void onNatsTheChaosRunAppliesEveryEventOnceInOrder() throws Exception {
    assertSmallChaosRunHolds(Demo.Broker.nats, NatsServer.MACHINE_URL, 1, 13_000, 1_000);
  }

  @Test
  void onRabbitMqTheChaosRunAppliesEveryEventOnceInOrder() throws Exception {
    assertSmallChaosRunHolds(Demo.Broker.rabbitmq, RabbitServer.MACHINE_URI, 2, 13_000, 1_000);
  }

  @Test
  void onSqsTheChaosRunAppliesEveryEventOnceInOrder() throws Exception {
    // an ElasticMQ of the demo's own, slower than the others: fewer orders, chaos for as long
    assertSmallChaosRunHolds(Demo.Broker.sqs, null, 2, 3_900, 300);
  }

  @Test
  void onMariaDbTheChaosRunAppliesEveryEventOnceInOrder() throws Exception {
    // the machine's MariaDB: the outbox, the relays' leases and the inventory's inbox all on it
    Demo.Settings settings = new Demo.Settings(13_000, 1_000, 50, 4, 2, 2, 2, true, CHAOS_INTERVAL,
        Duration.ofSeconds(2), TestMariaDb.serverJdbcUrl(), Demo.Broker.kafka, KafkaBroker.shared().bootstrapServers(),
        Duration.ofMinutes(5), false, Demo.Source.table, Demo.Database.mariadb);
    assertChaosRunHolds(settings, 13_000);
  }

  @Test
  void withWalMessagesStreamedFromASlotTheChaosRunAppliesEveryEventOnceInOrder() throws Exception {
    // the machine's PostgreSQL runs with wal_level=replica: the demo's embedded one, with logical
    Demo.Settings settings = new Demo.Settings(13_000, 1_000, 50, 4, 2, 2, 2, true, CHAOS_INTERVAL,
        Duration.ofSeconds(2), null, Demo.Broker.kafka, KafkaBroker.shared().bootstrapServers(),
        Duration.ofMinutes(5), false, Demo.Source.logical, Demo.Database.postgresql);
    assertChaosRunHolds(settings, 13_000);
  }

  /** {@code orders} at {@code rate}, chaos about every second, against the machine's broker (or one the demo starts). */
  private static void assertSmallChaosRunHolds(Demo.Broker broker, String address, int consumers, int orders,
      int rate) throws Exception {
    assertChaosRunHolds(new Demo.Settings(orders, rate, 50, 4, 2, consumers, 2, true, CHAOS_INTERVAL,
        Duration.ofSeconds(2), TestDatabase.jdbcUrl(), broker, address, Duration.ofMinutes(5), false,
        Demo.Source.table, Demo.Database.postgresql), orders);
  }

  private static void assertChaosRunHolds(Demo.Settings settings, int orders) throws Exception {
    DemoReport report = new Demo(settings, System.out).run();
    report.print(System.out);

    assertThat(report.written()).isEqualTo(orders);
    assertThat(report.kills()).as("processes SIGKILLed by chaos").isGreaterThanOrEqualTo(3);
    assertThat(report.applied()).isEqualTo(orders);
    assertThat(report.lost()).isZero();
    assertThat(report.appliedTwice()).isZero();
    assertThat(report.orderViolations()).isZero();
    assertThat(report.wrongStockLevels()).isZero();
    assertThat(report.ok()).isTrue();
  }
}
