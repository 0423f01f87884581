package io.txbox.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.txbox.server.DurationConverter;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code java -jar txbox-demo.jar}: see {@link Demo}. With no options it needs nothing installed:
 * it starts an embedded PostgreSQL and a Kafka broker of its own. {@code java -jar txbox-demo.jar
 * quickstart} is the short tour ({@link QuickstartCommand}).
 */
@Command(name = "txbox-demo", mixinStandardHelpOptions = true, subcommands = QuickstartCommand.class,
    description = {
      "Runs an order service that writes through the outbox, relays that publish to Kafka (or NATS, RabbitMQ, SQS) and inventory"
          + " services that reserve stock through the inbox, while chaos SIGKILLs relays and inventory"
          + " services at random. Reports lost, applied-twice and out-of-order events, and exits 1 if any"
          + " of them is not 0.",
      "Needs nothing installed: without --jdbc-url it starts an embedded PostgreSQL, without"
          + " --kafka-bootstrap-servers a Kafka broker. With them it works in a new schema and topic,"
          + " and drops the schema at the end. --broker nats and --broker rabbitmq start the machine's"
          + " nats-server or RabbitMQ on a port of their own, unless --nats-servers or --rabbitmq-uri is given;"
          + " --broker sqs starts ElasticMQ (an SQS-compatible server from Maven Central) unless --sqs-endpoint is given."})
final class DemoCommand implements Callable<Integer> {
  @Option(names = "--events", defaultValue = "20000", description = "Orders to place. Default: ${DEFAULT-VALUE}.")
  long events;

  @Option(names = "--rate", defaultValue = "500", description = "Orders per second. Default: ${DEFAULT-VALUE}.")
  int rate;

  @Option(names = "--products", defaultValue = "50",
      description = "SKUs, the events' keys. Default: ${DEFAULT-VALUE}.")
  int products;

  @Option(names = "--writers", defaultValue = "4",
      description = "Order service threads, each with its own SKUs. Default: ${DEFAULT-VALUE}.")
  int writers;

  @Option(names = "--relays", defaultValue = "2", description = "Relay processes. Default: ${DEFAULT-VALUE}.")
  int relays;

  @Option(names = "--consumers",
      description = "Inventory service processes. Default: 2 (1 with --broker nats, where one durable consumer keeps the order).")
  Integer consumers;

  @Option(names = "--consumer-threads", defaultValue = "2",
      description = "Threads in each inventory service: Kafka consumers handling partitions in parallel, or (NATS,"
          + " RabbitMQ) handlers of different keys. Default: ${DEFAULT-VALUE}.")
  int consumerThreads;

  @Option(names = "--chaos", negatable = true, defaultValue = "true", fallbackValue = "true",
      description = "SIGKILL a relay or inventory service at random moments (--no-chaos: never). Default: on.")
  boolean chaos;

  @Option(names = "--chaos-interval", converter = DurationConverter.class, defaultValue = "3s",
      description = "Mean time between kills. Default: 3s.")
  Duration chaosInterval;

  @Option(names = "--warm-up", converter = DurationConverter.class, defaultValue = "5s",
      description = "Orders at the full rate before the measured run, which wait until reserved. Default: 5s.")
  Duration warmUp;

  @Option(names = "--jdbc-url", description = "PostgreSQL to use instead of an embedded one; with --database mariadb,"
      + " the MariaDB server to use (required), such as jdbc:mariadb://127.0.0.1:3306/?user=root.")
  String jdbcUrl;

  @Option(names = "--database", defaultValue = "postgresql",
      description = "Where the services and txbox keep their rows: ${COMPLETION-CANDIDATES}. MariaDB needs"
          + " --jdbc-url; the demo creates a database of its own there and drops it at the end. Default: ${DEFAULT-VALUE}.")
  Demo.Database database;

  @Option(names = "--broker", defaultValue = "kafka",
      description = "Where the events travel: ${COMPLETION-CANDIDATES}. Default: ${DEFAULT-VALUE}.")
  Demo.Broker broker;

  @Option(names = "--source", defaultValue = "table",
      description = "table: outbox rows, relays sharing buckets; logical: WAL messages streamed from a replication"
          + " slot in commit order, one relay streaming and the others standing by (the embedded PostgreSQL runs"
          + " with wal_level=logical; a --jdbc-url server needs it). Default: ${DEFAULT-VALUE}.")
  Demo.Source source;

  @Option(names = "--kafka-bootstrap-servers", description = "Kafka to use instead of a broker of its own.")
  String kafka;

  @Option(names = "--nats-servers", description = "NATS to use (with --broker nats) instead of a server of its own.")
  String nats;

  @Option(names = "--rabbitmq-uri", description = "RabbitMQ to use (with --broker rabbitmq) instead of a node of its own.")
  String rabbitmq;

  @Option(names = "--sqs-endpoint", description = "An SQS-compatible endpoint to use (with --broker sqs) instead of"
      + " an ElasticMQ of its own; credentials from the AWS SDK's chain.")
  String sqs;

  @Option(names = "--timeout", converter = DurationConverter.class, defaultValue = "5m",
      description = "How long to wait for the last reservations after the last order. Default: 5m.")
  Duration timeout;

  @Option(names = "--keep", description = "Keep the demo's schema instead of dropping it.")
  boolean keep;

  @Option(names = "--results-json", description = "Also writes the report, with the settings it ran with,"
      + " as JSON to this file: the end-to-end benchmark's results (BENCHMARKS.md).")
  Path resultsJson;

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    int processes = consumers != null ? consumers : broker == Demo.Broker.nats ? 1 : 2;
    Demo.Settings settings = new Demo.Settings(events, rate, products, writers, relays, processes, consumerThreads, chaos,
        chaosInterval, warmUp, jdbcUrl, broker, brokerAddress(), timeout, keep, source, database);
    DemoReport report = new Demo(settings, System.out).run();
    report.print(System.out);
    if (resultsJson != null) {
      writeResults(settings, report);
    }
    return report.ok() ? 0 : 1;
  }

  /** The report as JSON, with the command line and the settings (a broker address and URL are left out). */
  private void writeResults(Demo.Settings settings, DemoReport report) throws IOException {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("benchmark", "end-to-end");
    json.put("command", "java -jar txbox-demo/target/txbox-demo.jar " + String.join(" ", argumentsBut("--results-json")));
    Map<String, Object> ran = new LinkedHashMap<>();
    ran.put("events", settings.events());
    ran.put("rate", settings.perSecond());
    ran.put("relays", settings.relays());
    ran.put("consumers", settings.consumers());
    ran.put("consumerThreads", settings.consumerThreads());
    ran.put("chaos", settings.chaos());
    ran.put("broker", settings.broker().name());
    ran.put("source", settings.source().name());
    ran.put("database", settings.database().name());
    ran.put("embeddedDatabase", settings.jdbcUrl() == null);
    json.put("settings", ran);
    json.put("report", report);
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(resultsJson.toFile(), json);
    System.out.println("written to " + resultsJson);
  }

  /** The command line without {@code option} and its value. */
  private List<String> argumentsBut(String option) {
    List<String> args = new ArrayList<>();
    List<String> given = spec.commandLine().getParseResult().originalArgs();
    for (int i = 0; i < given.size(); i++) {
      if (given.get(i).equals(option)) {
        i++; // its value
      } else if (!given.get(i).startsWith(option + "=")) {
        args.add(given.get(i));
      }
    }
    return args;
  }

  /** The address given for the chosen broker; one given for another broker is a mistake. */
  private String brokerAddress() {
    refuse(broker != Demo.Broker.kafka && kafka != null, "--kafka-bootstrap-servers");
    refuse(broker != Demo.Broker.nats && nats != null, "--nats-servers");
    refuse(broker != Demo.Broker.rabbitmq && rabbitmq != null, "--rabbitmq-uri");
    refuse(broker != Demo.Broker.sqs && sqs != null, "--sqs-endpoint");
    return switch (broker) {
      case kafka -> kafka;
      case nats -> nats;
      case rabbitmq -> rabbitmq;
      case sqs -> sqs;
    };
  }

  private void refuse(boolean mistaken, String option) {
    if (mistaken) {
      throw new IllegalArgumentException(option + " does not go with --broker " + broker);
    }
  }
}
