package io.txbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class BacklogMetersTest {
  private TestDatabase db;
  private PostgresOutboxStore store;
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  @BeforeEach
  void createSchema() {
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(4).build();
    store.migrate();
    store.relay().openSubscription("default");
  }

  @AfterEach
  void dropSchema() {
    db.close();
  }

  @Test
  void pendingEventsAndTheAgeOfTheOldestAreShownPerSubscription() throws SQLException {
    Instant later = Instant.now().plus(Duration.ofMinutes(5));
    BacklogMeters.builder(store.relay()).refresh(Duration.ZERO).clock(Clock.fixed(later, ZoneOffset.UTC))
        .build().bindTo(registry);
    assertThat(pending()).isZero();
    assertThat(oldestAgeSeconds()).isZero();

    write(3);

    assertThat(pending()).isEqualTo(3);
    assertThat(oldestAgeSeconds()).isBetween(240.0, 301.0);
  }

  @Test
  void aReadingIsKeptUntilTheRefreshIsDue() throws SQLException {
    BacklogMeters.builder(store.relay()).refresh(Duration.ofHours(1)).build().bindTo(registry);
    assertThat(pending()).isZero();
    write(2);
    assertThat(pending()).as("the reading from before the writes").isZero();
  }

  @Test
  void aDatabaseThatCannotBeReadShowsNaNNotAnOldFigure() throws SQLException {
    BacklogMeters.builder(store.relay()).refresh(Duration.ZERO).build().bindTo(registry);
    write(1);
    assertThat(pending()).isEqualTo(1);
    db.close();
    assertThat(pending()).isNaN();
  }

  @Test
  void aScrapeWhileTheDatabaseHangsAnswersAtOnceFromTheLastFiguresAndSaysHowOldTheyAre() throws Exception {
    BacklogMeters.builder(store.relay()).refresh(Duration.ZERO).readWait(Duration.ofMillis(200)).build().bindTo(registry);
    write(2);
    assertThat(pending()).isEqualTo(2);
    assertThat(registry.get("txbox.outbox.database.unreachable").gauge().value()).isZero();

    try (Connection locker = db.dataSource().getConnection()) {
      locker.setAutoCommit(false);
      try (var s = locker.createStatement()) {
        s.execute("LOCK TABLE " + store.operator().outboxTable() + " IN ACCESS EXCLUSIVE MODE"); // every read of it waits
      }
      long start = System.nanoTime();
      double shown = pending();
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      assertThat(shown).as("the last figure read").isEqualTo(2);
      assertThat(took).as("a scrape waits at most readWait, not for the database").isLessThan(Duration.ofSeconds(5));
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        assertThat(registry.get("txbox.outbox.reading.age").timeGauge().value(TimeUnit.MILLISECONDS))
            .isGreaterThan(300);
        assertThat(registry.get("txbox.outbox.database.unreachable").gauge().value()).isEqualTo(1);
      });
      locker.rollback();
    }
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      pending();
      assertThat(registry.get("txbox.outbox.database.unreachable").gauge().value()).isZero();
    });
  }

  @Test
  void theGaugesOfManySubscriptionsWaitForAHangingDatabaseOnceInAllNotOnceEach() throws Exception {
    BacklogMeters.builder(store.relay()).subscriptions("a", "b", "c", "d").refresh(Duration.ZERO)
        .readWait(Duration.ofMillis(500)).build().bindTo(registry);
    registry.getMeters().forEach(m -> m.measure().forEach(x -> { })); // a first scrape, the database answering
    try (Connection locker = db.dataSource().getConnection()) {
      locker.setAutoCommit(false);
      try (var s = locker.createStatement()) {
        s.execute("LOCK TABLE " + store.operator().outboxTable() + " IN ACCESS EXCLUSIVE MODE");
      }
      long start = System.nanoTime();
      registry.getMeters().forEach(m -> m.measure().forEach(x -> { })); // a scrape of all nine gauges
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      assertThat(took).as("nine gauges, one reading: one wait of 500 ms in all, not one a gauge")
          .isLessThan(Duration.ofMillis(1_500));
      locker.rollback();
    }
  }

  @Test
  void aTransactionLeftOpenShowsAsTheAgeThatHoldsDeliveryBack() throws Exception {
    BacklogMeters.builder(store.relay()).refresh(Duration.ZERO).build().bindTo(registry);
    try (Connection open = db.dataSource().getConnection()) {
      open.setAutoCommit(false);
      try (var s = open.createStatement()) {
        s.execute("SELECT pg_current_xact_id()"); // a transaction id: the relay's horizon stops here
      }
      await().atMost(Duration.ofSeconds(10)).until(() -> openTransactionAgeSeconds() >= 1.0);
      open.rollback();
    }
    db.close();
    assertThat(openTransactionAgeSeconds()).as("unknown, not none").isNaN();
  }

  @Test
  void aLimitPerBucketOutsideItsBoundsIsRefusedWithItsName() {
    assertThatThrownBy(() -> BacklogMeters.builder(store.relay()).limitPerBucket(0).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("limitPerBucket must be between 1 and 10,000,000");
  }

  private double pending() {
    return registry.get("txbox.outbox.pending").tag("subscription", "default").gauge().value();
  }

  private double oldestAgeSeconds() {
    return registry.get("txbox.outbox.oldest.pending.age").timeGauge().value(TimeUnit.SECONDS);
  }

  private double openTransactionAgeSeconds() {
    return registry.get("txbox.outbox.open.transaction.age").timeGauge().value(TimeUnit.SECONDS);
  }

  private void write(int events) throws SQLException {
    Outbox outbox = Outbox.create(store.writer());
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      for (int i = 0; i < events; i++) {
        outbox.send(c, Message.builder().type("T").key("k" + i).destination("d").payload(new byte[] {1}).build());
      }
      c.commit();
    }
  }
}
