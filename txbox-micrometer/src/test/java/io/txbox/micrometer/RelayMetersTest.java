package io.txbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.Metrics;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class RelayMetersTest {
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final RelayMeters meters = RelayMeters.create(registry);

  @Test
  void publishedEventsCountAndTheirLagIsTimedFromTheirTimestamp() {
    Instant twoSecondsAgo = Instant.now().minusSeconds(2);
    meters.published("orders", List.of(message(twoSecondsAgo), message(twoSecondsAgo)));

    assertThat(registry.get("txbox.relay.published").tag("subscription", "orders").counter().count()).isEqualTo(2);
    assertThat(registry.get("txbox.relay.lag").timer().count()).isEqualTo(2);
    assertThat(registry.get("txbox.relay.lag").timer().max(TimeUnit.MILLISECONDS)).isBetween(2000.0, 60_000.0);
  }

  @Test
  void aDelayedEventsLagCountsFromTheEndOfItsDelay() {
    Message delayed = Message.builder().type("T").destination("d").payload(new byte[0])
        .createdAt(Instant.now().minus(Duration.ofHours(1))).delay(Duration.ofMinutes(59)).build();
    meters.published("orders", List.of(delayed));
    assertThat(registry.get("txbox.relay.lag").timer().max(TimeUnit.MINUTES)).isLessThan(2);
  }

  @Test
  void failuresAreCountedByErrorAndDeadLettersBySubscription() {
    Message m = message(Instant.now());
    meters.retrying("orders", m, 1, new IOException("broker down"));
    meters.retrying("orders", m, 2, new IOException("broker down"));
    meters.deadLettered(new DeadLetter("orders", 3, Checkpoint.START, m, "too large", 1));

    assertThat(registry.get("txbox.relay.failures").tag("subscription", "orders").counter().count()).isEqualTo(2);
    assertThat(registry.get("txbox.relay.failures.by.error").tag("error", "IOException").counter().count()).isEqualTo(2);
    assertThat(registry.get("txbox.relay.dead.letters").tag("subscription", "orders").counter().count()).isEqualTo(1);
  }

  @Test
  void exactlyOnceTransactionsAreCountedByOutcome() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    RelayMeters meters = RelayMeters.create(registry);
    meters.transaction("orders", Metrics.TransactionOutcome.COMMITTED);
    meters.transaction("orders", Metrics.TransactionOutcome.COMMITTED);
    meters.transaction("orders", Metrics.TransactionOutcome.FENCED);

    assertThat(registry.get("txbox.relay.transactions").tags("subscription", "orders", "outcome", "committed")
        .counter().count()).isEqualTo(2);
    assertThat(registry.get("txbox.relay.transactions").tags("subscription", "orders", "outcome", "fenced")
        .counter().count()).isEqualTo(1);
  }

  @Test
  void ownedBucketsAreAGaugePerSubscription() {
    meters.bucketsOwned("orders", 32);
    assertThat(registry.get("txbox.relay.buckets.owned").tag("subscription", "orders").gauge().value()).isEqualTo(32);
    meters.bucketsOwned("orders", 0);
    assertThat(registry.get("txbox.relay.buckets.owned").gauge().value()).isZero();
  }

  @Test
  void registeredCountersStartAtZeroSoThatTheFirstFailureOrDeadLetterIsAnIncrease() {
    meters.register("orders");
    assertThat(registry.get("txbox.relay.failures").tag("subscription", "orders").counter().count()).isZero();
    assertThat(registry.get("txbox.relay.dead.letters").tag("subscription", "orders").counter().count()).isZero();
    assertThat(registry.get("txbox.relay.published").tag("subscription", "orders").counter().count()).isZero();
  }

  @Test
  void aRelayThatReportsNoBucketsExportsNoBucketGauge() {
    meters.published("slot_a", List.of(message(Instant.now())));
    assertThat(registry.find("txbox.relay.buckets.owned").gauge()).isNull();
    assertThat(registry.get("txbox.relay.published").tag("subscription", "slot_a").counter().count()).isEqualTo(1);
  }

  private static Message message(Instant createdAt) {
    return Message.builder().type("T").destination("d").payload(new byte[0]).createdAt(createdAt).build();
  }
}
