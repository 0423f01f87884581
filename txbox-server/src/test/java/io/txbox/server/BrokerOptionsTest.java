package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class BrokerOptionsTest {

  /** {@code txbox relay} parsed, not run: what its start line would say of the broker. */
  private static String described(String... args) {
    String[] all = new String[args.length + 1];
    all[0] = "relay";
    System.arraycopy(args, 0, all, 1, args.length);
    CommandLine cli = Main.commandLine(new TxboxCommand(), Map.of(), all);
    CommandLine.ParseResult parsed = cli.parseArgs(all);
    RelayCommand relay = (RelayCommand) parsed.subcommand().commandSpec().userObject();
    return relay.brokers.describe();
  }

  @Test
  void theStartLineNamesTheGivenSettingsAndNeverASecretsValue() {
    String line = described("--kafka-bootstrap-servers", "kafka-1:9092", "--kafka-producer",
        "linger.ms=5,ssl.keystore.key=-----BEGIN PRIVATE KEY-----MIIEv,ssl.key.password=Sec\"ret99",
        "--kafka-producer", "sasl.jaas.config=PlainLoginModule required username=\"app\" password=\"s3\";");

    assertThat(line).startsWith("kafka kafka-1:9092 (").contains("producer.linger.ms=5", "producer.ssl.keystore.key=***",
        "producer.ssl.key.password=***", "producer.sasl.jaas.config=***")
        .doesNotContain("MIIEv", "ret99", "s3\"", "username");
  }

  @Test
  void aBrokerUriIsShownAsSchemeHostAndPort() {
    assertThat(described("--broker", "rabbitmq", "--rabbitmq-uri", "amqp://u:ab'cd@rabbit:5672/prod?heartbeat=5"))
        .isEqualTo("rabbitmq amqp://rabbit:5672");
  }
}
