package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.sqs.SqsMessages;
import io.txbox.testkit.ElasticMqServer;
import io.txbox.testkit.FaultDrill;
import io.txbox.testkit.TestDatabase;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * {@code txbox relay --broker sqs} as its own process, into a FIFO queue of ElasticMQ (an
 * SQS-compatible server): killed mid-run and started again, it loses nothing, and each key
 * arrives in order, each event once, because SQS drops the resends by their deduplication id.
 */
@FaultDrill
class RelayToSqsTest {
  private static final int EVENTS = 3000;
  private static final int KEYS = 20;
  private ElasticMqServer sqsServer;
  private SqsClient sqs;
  private TestDatabase db;
  private PostgresOutboxStore store;
  private String queue;
  @TempDir Path dir;

  @BeforeEach
  void setUp() {
    sqsServer = ElasticMqServer.start();
    sqs = SqsClient.builder().endpointOverride(URI.create(sqsServer.address())).region(Region.US_EAST_1)
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("test", "test")))
        .httpClient(UrlConnectionHttpClient.create()).build();
    queue = "orders-" + UUID.randomUUID().toString().substring(0, 8) + ".fifo";
    sqs.createQueue(r -> r.queueName(queue).attributes(Map.of(QueueAttributeName.FIFO_QUEUE, "true")));
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).build();
    store.migrate();
  }

  @AfterEach
  void tearDown() {
    db.close();
    sqs.close();
    sqsServer.close();
  }

  @Test
  void aRelayKilledMidRunLosesNothingAndSqsDropsItsResends() throws Exception {
    writeEvents();
    Map<String, List<Integer>> byKey = new LinkedHashMap<>();
    List<UUID> ids = new ArrayList<>();
    try (RelayProcesses relays = new RelayProcesses()) {
      Process first = relays.start(dir, credentials(), relayArgs("relay-a"));
      await().atMost(Duration.ofSeconds(60)).until(() -> receive(byKey, ids) && ids.size() >= EVENTS / 3);
      first.destroyForcibly(); // SIGKILL: its last batch may be sent again by the next relay
      first.waitFor(10, TimeUnit.SECONDS);
      relays.start(dir, credentials(), relayArgs("relay-b"));
      await().atMost(Duration.ofSeconds(120)).until(() -> receive(byKey, ids) && ids.size() >= EVENTS);
      // anything sent twice would be in the queue a second later
      await().pollDelay(Duration.ofSeconds(1)).until(() -> receive(byKey, ids));
      assertThat(relays.log(0) + relays.log(1)).doesNotContain("ERROR");
    }
    assertThat(ids).as("each event once").doesNotHaveDuplicates().hasSize(EVENTS);
    byKey.forEach((key, values) -> assertThat(values).as("key %s in order", key).isSorted());
  }

  private List<String> relayArgs(String instance) {
    return List.of("--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema(), "--instance-id", instance,
        "--broker", "sqs", "--sqs-endpoint", sqsServer.address(), "--sqs-region", "us-east-1",
        "--batch-size", "100", "--idle-interval", "20ms", "--heartbeat-interval", "250ms", "--lease-duration", "2s");
  }

  /** The relay takes its credentials from the AWS SDK's chain; here, its system properties. */
  private static List<String> credentials() {
    return List.of("-Daws.accessKeyId=test", "-Daws.secretAccessKey=test");
  }

  /** Receives and deletes what the queue has now, in its order; always true, for await(). */
  private boolean receive(Map<String, List<Integer>> byKey, List<UUID> ids) {
    String url = sqs.getQueueUrl(r -> r.queueName(queue)).queueUrl();
    List<software.amazon.awssdk.services.sqs.model.Message> got;
    do {
      got = sqs.receiveMessage(r -> r.queueUrl(url).maxNumberOfMessages(10).messageAttributeNames("All")).messages();
      for (software.amazon.awssdk.services.sqs.model.Message m : got) {
        Message message = SqsMessages.toMessage(m, queue);
        ids.add(message.id());
        byKey.computeIfAbsent(message.key(), k -> new ArrayList<>())
            .add(Integer.parseInt(new String(message.payload(), StandardCharsets.UTF_8)));
        sqs.deleteMessage(r -> r.queueUrl(url).receiptHandle(m.receiptHandle()));
      }
    } while (!got.isEmpty());
    return true;
  }

  private void writeEvents() throws SQLException {
    Outbox outbox = Outbox.create(store.writer());
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      for (int i = 0; i < EVENTS; i++) {
        outbox.send(c, Message.builder().type("OrderPlaced").destination(queue).key("key-" + (i % KEYS))
            .payload(Integer.toString(i), "text/plain").build());
        if (i % 100 == 99) {
          c.commit();
        }
      }
      c.commit();
    }
  }
}
