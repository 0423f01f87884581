package io.txbox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.jdbc.ServerConnections;
import io.txbox.jdbc.spi.Database;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.testkit.JdkNeutral;
import io.txbox.testkit.PgBouncer;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The PostgreSQL store behind Debian's PgBouncer 1.18, as many production databases are reached:
 * how txbox tells a pooler that lends server connections per transaction (where no named prepared
 * statement, {@code SET} or {@code LISTEN} outlives a transaction) from one that lends them per
 * session, and how a relay behind the first is still woken at each commit. The stores' contracts
 * run through both: {@link PgBouncerOutboxStoreContractTest}, {@link PgBouncerInboxTest}.
 */
@JdkNeutral
class PgBouncerTest {
  private static final Database POSTGRES = Database.forUrl(TestDatabase.jdbcUrl()).orElseThrow();
  private static PgBouncer transactionPooler;
  private static PgBouncer sessionPooler;

  @BeforeAll
  static void startPoolers() {
    transactionPooler = TestDatabase.pooler(PgBouncer.Mode.TRANSACTION, 8);
    sessionPooler = TestDatabase.pooler(PgBouncer.Mode.SESSION, 30);
  }

  @AfterAll
  static void stopPoolers() {
    if (transactionPooler != null) {
      transactionPooler.close();
    }
    if (sessionPooler != null) {
      sessionPooler.close();
    }
  }

  @Test
  void connectionsLentPerTransactionAreToldApartFromDirectAndSessionPooledOnes() {
    try (TestDatabase direct = TestDatabase.create();
        TestDatabase session = TestDatabase.create(TestDatabase.throughPooler(sessionPooler));
        TestDatabase transaction = TestDatabase.create(TestDatabase.throughPooler(transactionPooler))) {
      assertThat(ServerConnections.of(direct.dataSource(), POSTGRES)).isEqualTo(ServerConnections.PER_SESSION);
      assertThat(ServerConnections.of(session.dataSource(), POSTGRES)).isEqualTo(ServerConnections.PER_SESSION);
      assertThat(ServerConnections.of(transaction.dataSource(), POSTGRES)).isEqualTo(ServerConnections.PER_TRANSACTION);
    }
  }

  @Test
  void transactionPoolingIsToldWhileOtherClientsTakeAndGiveBackServerConnections() throws Exception {
    try (TestDatabase busy = TestDatabase.create(TestDatabase.throughPooler(transactionPooler))) {
      java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
      Thread others = new Thread(() -> {
        while (running.get()) { // as a second relay starting beside the first does
          try (Connection c = busy.dataSource().getConnection(); java.sql.Statement s = c.createStatement()) {
            s.execute("SELECT pg_backend_pid()");
          } catch (java.sql.SQLException e) {
            return;
          }
        }
      });
      others.start();
      try {
        for (int i = 0; i < 10; i++) {
          assertThat(ServerConnections.of(busy.dataSource(), POSTGRES)).isEqualTo(ServerConnections.PER_TRANSACTION);
        }
      } finally {
        running.set(false);
        others.join();
      }
    }
  }

  @Test
  void withOneServerConnectionTransactionPoolingIsStillTold() {
    try (PgBouncer single = TestDatabase.pooler(PgBouncer.Mode.TRANSACTION, 1);
        TestDatabase db = TestDatabase.create(TestDatabase.throughPooler(single))) {
      assertThat(ServerConnections.of(db.dataSource(), POSTGRES)).isEqualTo(ServerConnections.PER_TRANSACTION);
    }
  }

  @Test
  void aListenThroughTransactionPoolingIsFoundToHearNothingAndTheLogSaysWhatToDo() throws Exception {
    java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
    java.io.PrintStream original = System.err;
    System.setErr(new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8));
    java.util.concurrent.atomic.AtomicInteger heard = new java.util.concurrent.atomic.AtomicInteger();
    try (TestDatabase pooled = TestDatabase.create(TestDatabase.throughPooler(transactionPooler));
        TestDatabase direct = TestDatabase.create();
        io.txbox.postgres.internal.PostgresListener deaf =
            new io.txbox.postgres.internal.PostgresListener(pooled.dataSource(), "txbox_check_" + pooled.schema(), () -> {});
        io.txbox.postgres.internal.PostgresListener hearing =
            new io.txbox.postgres.internal.PostgresListener(direct.dataSource(), "txbox_check_" + direct.schema(),
                heard::incrementAndGet)) {
      await().atMost(Duration.ofSeconds(20)).until(deaf::hearsNothing);
      assertThat(err.toString()).contains("hears nothing, not even its own NOTIFY", "--listen-jdbc-url");
      await().atMost(Duration.ofSeconds(20)).until(() -> heard.get() > 0); // the check, sent from another connection
      assertThat(hearing.hearsNothing()).as("a direct connection hears the check").isFalse();
    } finally {
      System.setErr(original);
    }
  }

  @Test
  void aRelayBehindTransactionPoolingIsWokenAtEachCommitThroughItsOwnListenConnection() throws Exception {
    try (TestDatabase db = TestDatabase.create(TestDatabase.throughPooler(transactionPooler))) {
      PGSimpleDataSource direct = new PGSimpleDataSource();
      direct.setURL(TestDatabase.jdbcUrl());
      PostgresOutboxStore store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema())
          .listenDataSource(direct).build();
      store.migrate();
      BlockingQueue<Long> published = new LinkedBlockingQueue<>();
      Publisher recording = new Publisher() {
        @Override
        public PublishResult publish(List<Message> batch) {
          batch.forEach(m -> published.add(System.nanoTime()));
          return PublishResult.allAcknowledged(batch.size());
        }

        @Override
        public void close() {}
      };
      try (Relay relay = Relay.builder(store.relay(), recording).idleInterval(Duration.ofMinutes(1)).build().start()) {
        await().atMost(Duration.ofSeconds(30)).until(() -> relay.ownedBuckets().size() == PostgresOutboxStore.DEFAULT_BUCKETS);
        // Idle long enough that the relay's own polls are seconds apart (they double up to a minute).
        Thread.sleep(10_000);
        long committed = System.nanoTime();
        try (Connection c = db.dataSource().getConnection()) {
          c.setAutoCommit(false);
          Outbox.create(store.writer()).send(c, Message.builder().type("Test").destination("t").key("k")
              .payload(new byte[] {1}).build());
          c.commit();
        }
        Long relayed = published.poll(5, TimeUnit.SECONDS);
        assertThat(relayed).as("relayed at all within 5 s").isNotNull();
        assertThat(Duration.ofNanos(relayed - committed)).as("woken by the commit's NOTIFY, not by a poll")
            .isLessThan(Duration.ofSeconds(2));
      }
    }
  }
}
