package io.txbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.Nats;
import io.nats.client.api.StreamConfiguration;
import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.Relay;
import io.txbox.RetryPolicy;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.testkit.NatsServer;
import io.txbox.testkit.TestDatabase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The relay to NATS JetStream and back through the subscriber, against the machine's NATS. */
class RelayToNatsTest {
  private final String subject = "orders-" + UUID.randomUUID().toString().substring(0, 8);
  private final String stream = "S_" + subject;
  private TestDatabase db;
  private PostgresOutboxStore store;

  @BeforeEach
  void setUp() throws Exception {
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(8).build();
    store.migrate();
    try (Connection nats = Nats.connect(NatsServer.MACHINE_URL)) {
      nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects(subject).build());
    }
  }

  @AfterEach
  void tearDown() throws Exception {
    try (Connection nats = Nats.connect(NatsServer.MACHINE_URL)) {
      nats.jetStreamManagement().deleteStream(stream);
    }
    db.close();
  }

  /** Both wire formats: subscribers read messages that relays of txbox 0.1 wrote, too. */
  @ParameterizedTest
  @EnumSource(NatsMessages.Format.class)
  void theRelayDeliversEveryEventOnceInOrderPerKeyThroughTheSubscriber(NatsMessages.Format format) throws Exception {
    Outbox outbox = Outbox.create(store.writer());
    List<Message> written = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      Message m = Message.builder().type("OrderPlaced").destination(subject).key("order-" + (i % 7))
          .payload(("order-" + (i % 7) + ":" + i).getBytes(StandardCharsets.UTF_8)).build();
      try (java.sql.Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        outbox.send(c, m);
        c.commit();
      }
      written.add(m);
    }
    Map<String, List<String>> received = new ConcurrentHashMap<>();
    Inbox inbox = Inbox.create(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build());

    try (Relay relay = Relay.builder(store.relay(), NatsPublisher.builder().servers(NatsServer.MACHINE_URL).format(format).build())
            .idleInterval(Duration.ofMillis(20)).build().start();
        NatsSubscriber subscriber = NatsSubscriber.builder(inbox, "inventory", (tx, m, key) ->
                received.computeIfAbsent(m.key(), k -> new CopyOnWriteArrayList<>())
                    .add(new String(m.payload(), StandardCharsets.UTF_8)))
            .servers(NatsServer.MACHINE_URL).stream(stream).concurrency(4).build().start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> subscriber.processed() == written.size());
      assertThat(received).isEqualTo(byKey(written));
      assertThat(subscriber.duplicates()).isZero();
    }
  }

  @Test
  void aBatchSentAgainIsStoredOnceBecauseOfItsMessageIds() throws Exception {
    List<Message> batch = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      batch.add(Message.builder().type("Resent").destination(subject).key("k").payload(new byte[] {(byte) i}).build());
    }
    try (NatsPublisher publisher = NatsPublisher.builder().servers(NatsServer.MACHINE_URL).build()) {
      PublishResult first = publisher.publish(batch);
      PublishResult again = publisher.publish(batch); // as after a lost acknowledgement
      assertThat(first.failures()).isEmpty();
      assertThat(again.failures()).as("a resend is acknowledged, not refused").isEmpty();
    }
    assertThat(storedMessages()).isEqualTo(20);
  }

  @Test
  void anOversizedMessageFailsForGoodAndTheRestOfItsSubjectIsStoredInOrder() throws Exception {
    Message tooLarge = Message.builder().type("Big").destination(subject).key("k").payload(new byte[2 * 1024 * 1024]).build();
    List<Message> batch = new ArrayList<>(List.of(tooLarge));
    for (int i = 0; i < 5; i++) {
      batch.add(Message.builder().type("Small").destination(subject).key("k").payload(new byte[] {(byte) i}).build());
    }
    try (NatsPublisher publisher = NatsPublisher.builder().servers(NatsServer.MACHINE_URL).build()) {
      PublishResult result = publisher.publish(batch);

      assertThat(result.failure(0)).isInstanceOf(PermanentPublishException.class).hasMessageContaining("max_payload");
      assertThat(result.acknowledged()).isEqualTo(5);
    }
    assertThat(storedMessages()).isEqualTo(5);
  }

  @Test
  void badSettingsAreRefusedWithTheSettingsName() {
    assertThatThrownBy(() -> NatsPublisher.builder().build())
        .hasMessageContaining("servers must be set");
    assertThatThrownBy(() -> NatsPublisher.builder().servers("nats://h:4222").ackTimeout(Duration.ofHours(1)).build())
        .hasMessageContaining("ackTimeout must be");
    Inbox inbox = Inbox.create(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build());
    assertThatThrownBy(() -> NatsSubscriber.builder(inbox, "billing.v2", (tx, m, k) -> { })
        .servers(NatsServer.MACHINE_URL).stream(stream).build())
        .hasMessageContaining("durable must be").hasMessageContaining("set durable(...)");
    assertThatThrownBy(() -> NatsSubscriber.builder(inbox, "billing", (tx, m, k) -> { })
        .servers(NatsServer.MACHINE_URL).build())
        .hasMessageContaining("stream must name");
    assertThatThrownBy(() -> NatsSubscriber.builder(inbox, "billing", (tx, m, k) -> { })
        .servers(NatsServer.MACHINE_URL).stream(stream).ackWait(Duration.ofMillis(10)).build())
        .hasMessageContaining("ackWait must be >= 1 s");
    assertThatThrownBy(() -> NatsSubscriber.builder(inbox, "billing", (tx, m, k) -> { })
        .servers("not a url").stream(stream).build())
        .hasMessageContaining("servers must be URLs such as nats://host:4222, and 'not a url' is not one");
  }

  @Test
  void aSubscriberOfAStreamThatDoesNotExistFailsToStartAndSaysWhich() {
    Inbox inbox = Inbox.create(db.dataSource(), PostgresInboxStore.builder().schema(db.schema()).build());
    NatsSubscriber subscriber = NatsSubscriber.builder(inbox, "billing", (tx, m, k) -> { })
        .servers(NatsServer.MACHINE_URL).stream("NO_SUCH_STREAM").build();
    assertThatThrownBy(subscriber::start).hasMessageContaining("stream NO_SUCH_STREAM");
  }

  private long storedMessages() throws IOException, InterruptedException, JetStreamApiException {
    try (Connection nats = Nats.connect(NatsServer.MACHINE_URL)) {
      return nats.jetStreamManagement().getStreamInfo(stream).getStreamState().getMsgCount();
    }
  }

  private static Map<String, List<String>> byKey(List<Message> messages) {
    Map<String, List<String>> byKey = new LinkedHashMap<>();
    for (Message m : messages) {
      byKey.computeIfAbsent(m.key(), k -> new ArrayList<>()).add(new String(m.payload(), StandardCharsets.UTF_8));
    }
    return byKey;
  }
}
