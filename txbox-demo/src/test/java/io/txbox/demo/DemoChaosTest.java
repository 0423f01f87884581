package io.txbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.NatsServer;
import io.txbox.testkit.RabbitServer;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestMariaDb;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The demo's chaos run against the machine's PostgreSQL and a real broker: 100,000 orders while
 * relays and inventory services (separate JVMs) are SIGKILLed every few seconds; and in logical
 * mode, WAL messages streamed from a slot, on an embedded PostgreSQL with {@code wal_level=logical};
 * and on the machine's MariaDB.
 */
class DemoChaosTest {

  @Test
  void hundredThousandEventsUnderChaosAreAppliedOnceEachAndInOrderPerKey() throws Exception {
    Demo.Settings settings = new Demo.Settings(100_000, 1_000, 50, 4, 2, 2, 2, true, Duration.ofSeconds(3),
        Duration.ofSeconds(2), TestDatabase.jdbcUrl(), Demo.Broker.kafka, KafkaBroker.shared().bootstrapServers(),
        Duration.ofMinutes(5), false, Demo.Source.table, Demo.Database.postgresql);

    DemoReport report = new Demo(settings, System.out).run();
    report.print(System.out);

    assertThat(report.written()).isEqualTo(100_000);
    assertThat(report.kills()).as("processes SIGKILLed by chaos").isGreaterThanOrEqualTo(10);
    assertThat(report.applied()).isEqualTo(100_000);
    assertThat(report.lost()).isZero();
    assertThat(report.appliedTwice()).isZero();
    assertThat(report.orderViolations()).isZero();
    assertThat(report.wrongStockLevels()).isZero();
    assertThat(report.ok()).isTrue();
  }

  @Test
  void onNatsTheChaosRunAppliesEveryEventOnceInOrder() throws Exception {
    assertSmallChaosRunHolds(Demo.Broker.nats, NatsServer.MACHINE_URL, 1, 12_000, 500);
  }

  @Test
  void onRabbitMqTheChaosRunAppliesEveryEventOnceInOrder() throws Exception {
    assertSmallChaosRunHolds(Demo.Broker.rabbitmq, RabbitServer.MACHINE_URI, 2, 12_000, 500);
  }

  @Test
  void onSqsTheChaosRunAppliesEveryEventOnceInOrder() throws Exception {
    // an ElasticMQ of the demo's own, slower than the others: fewer orders, chaos for as long
    assertSmallChaosRunHolds(Demo.Broker.sqs, null, 2, 6_000, 150);
  }

  @Test
  void onMariaDbTheChaosRunAppliesEveryEventOnceInOrder() throws Exception {
    // the machine's MariaDB: the outbox, the relays' leases and the inventory's inbox all on it
    Demo.Settings settings = new Demo.Settings(12_000, 500, 50, 4, 2, 2, 2, true, Duration.ofSeconds(2),
        Duration.ofSeconds(2), TestMariaDb.serverJdbcUrl(), Demo.Broker.kafka, KafkaBroker.shared().bootstrapServers(),
        Duration.ofMinutes(5), false, Demo.Source.table, Demo.Database.mariadb);
    assertChaosRunHolds(settings, 12_000);
  }

  @Test
  void withWalMessagesStreamedFromASlotTheChaosRunAppliesEveryEventOnceInOrder() throws Exception {
    // the machine's PostgreSQL runs with wal_level=replica: the demo's embedded one, with logical
    Demo.Settings settings = new Demo.Settings(20_000, 500, 50, 4, 2, 2, 2, true, Duration.ofSeconds(2),
        Duration.ofSeconds(2), null, Demo.Broker.kafka, KafkaBroker.shared().bootstrapServers(),
        Duration.ofMinutes(5), false, Demo.Source.logical, Demo.Database.postgresql);
    assertChaosRunHolds(settings, 20_000);
  }

  /** {@code orders} at {@code rate}, chaos every 2 s, against the machine's broker (or one the demo starts). */
  private static void assertSmallChaosRunHolds(Demo.Broker broker, String address, int consumers, int orders,
      int rate) throws Exception {
    assertChaosRunHolds(new Demo.Settings(orders, rate, 50, 4, 2, consumers, 2, true, Duration.ofSeconds(2),
        Duration.ofSeconds(2), TestDatabase.jdbcUrl(), broker, address, Duration.ofMinutes(5), false,
        Demo.Source.table, Demo.Database.postgresql), orders);
  }

  private static void assertChaosRunHolds(Demo.Settings settings, int orders) throws Exception {
    DemoReport report = new Demo(settings, System.out).run();
    report.print(System.out);

    assertThat(report.written()).isEqualTo(orders);
    assertThat(report.kills()).as("processes SIGKILLed by chaos").isGreaterThanOrEqualTo(5);
    assertThat(report.applied()).isEqualTo(orders);
    assertThat(report.lost()).isZero();
    assertThat(report.appliedTwice()).isZero();
    assertThat(report.orderViolations()).isZero();
    assertThat(report.wrongStockLevels()).isZero();
    assertThat(report.ok()).isTrue();
  }
}
