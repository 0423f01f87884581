package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.Message;
import io.txbox.testkit.NatsServer;
import io.txbox.testkit.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Relays started with a secret in every place a user can put one (the JDBC URL, a config file,
 * a broker URI, a client property) never write it to their logs, whether they run or fail.
 */
class RelaySecretsTest {
  @TempDir Path dir;
  private final OutboxSchema schema = new OutboxSchema();

  @AfterEach
  void dropSchema() {
    schema.close();
  }

  @Test
  void secretsInTheUrlsTheConfigFileAndTheBrokerUrisStayOutOfTheLogs() throws Exception {
    Path config = dir.resolve("relay.properties");
    Files.writeString(config, "db-password=s3cr3t-in-file\n");
    String jdbcUrl = TestDatabase.jdbcUrl() + (TestDatabase.jdbcUrl().contains("?") ? "&" : "?")
        + "password=s3cr3t-in-url";
    try (RelayProcesses relays = new RelayProcesses()) {
      // NATS takes the credentials (the machine's server requires none) and runs
      relays.start(dir, List.of("--config", config.toString(), "--jdbc-url", jdbcUrl, "--schema", schema.name(),
          "--broker", "nats", "--nats-servers", "nats://app:s3cr3t-in-nats-uri@" + NatsServer.MACHINE_URL.substring(7),
          "--instance-id", "nats-relay", "--heartbeat-interval", "250ms", "--lease-duration", "2s",
          "--nats-ack-timeout", "7s"));
      await().atMost(Duration.ofSeconds(60)).until(() -> relays.log(0).contains("relay nats-relay started"));
      // RabbitMQ refuses the password: the failures are logged too
      relays.start(dir, List.of("--jdbc-url", jdbcUrl, "--schema", schema.name(), "--subscription", "rabbit",
          "--broker", "rabbitmq", "--rabbitmq-uri", "amqp://guest:ab'cd+s3cr3t-in-amqp-uri@127.0.0.1:5672",
          "--instance-id", "rabbit-relay", "--idle-interval", "20ms"));
      await().atMost(Duration.ofSeconds(60)).until(() -> relays.log(1).contains("relay rabbit-relay started"));
      schema.send(List.of(Message.builder().type("Secret").destination("secrets-test").key("k")
          .payload(new byte[] {1}).build()));
      await().atMost(Duration.ofSeconds(60)).until(() -> relays.log(1).contains("ACCESS_REFUSED"));

      for (int i = 0; i < 2; i++) {
        assertThat(relays.log(i)).as("relay %d's log", i)
            .doesNotContain("s3cr3t-in-file", "s3cr3t-in-url", "s3cr3t-in-nats-uri", "s3cr3t-in-amqp-uri");
      }
      assertThat(relays.log(0)).contains("nats " + NatsServer.MACHINE_URL + " (ack-timeout=PT7S)", "password=***");
      assertThat(relays.log(1)).contains("rabbitmq amqp://127.0.0.1:5672");
    }
  }
}
