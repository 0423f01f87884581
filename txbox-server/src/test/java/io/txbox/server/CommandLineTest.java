package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.Relay;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestMariaDb;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class CommandLineTest {
  private TestDatabase db;
  private final StringWriter err = new StringWriter();

  @BeforeEach
  void createSchema() {
    db = TestDatabase.create();
  }

  @AfterEach
  void dropSchema() {
    db.close();
  }

  private int run(Map<String, String> environment, String... args) {
    CommandLine cli = TxboxCommand.commandLine(args, environment);
    cli.setErr(new PrintWriter(err, true));
    return cli.execute(args);
  }

  private int run(String... args) {
    return run(Map.of(), args);
  }

  @Test
  void migrateIsSafeToRunTwice() {
    assertThat(run("migrate", "--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema())).isZero();
    assertThat(run("migrate", "--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema())).isZero();
  }

  @Test
  void migrateWithAPartitionSizePartitionsTheOutbox() throws Exception {
    assertThat(run("migrate", "--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema(),
        "--outbox-partition-size", "5000")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM pg_inherits WHERE inhparent = '{s}.txbox_outbox'::regclass"))
        .as("the old table, two partitions ahead, the default one").isEqualTo(4);
    assertThat(run("migrate", "--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema(),
        "--outbox-partition-size", "10")).isEqualTo(2);
    assertThat(err.toString()).contains("outboxPartitionSize must be 0 (a plain table) or >= 1000");
  }

  @Test
  void migratePrintsTheSqlForFlywayWithoutADatabase() {
    String[] args = {"migrate", "--print-sql", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere",
        "--schema", "shop", "--table-prefix", "tx_", "--buckets", "16"};
    StringWriter out = new StringWriter();
    CommandLine cli = TxboxCommand.commandLine(args, Map.of());
    cli.setOut(new PrintWriter(out, true));
    assertThat(cli.execute(args)).isZero();
    assertThat(out.toString())
        .contains("-- txbox V1__outbox.sql", "-- txbox V3__inbox_queue.sql")
        .contains("CREATE TABLE shop.tx_outbox")
        .contains("% 16)")
        .contains("INSERT INTO shop.tx_schema_version (version, name) VALUES (3, 'V3__inbox_queue.sql')")
        .doesNotContain("{schema}");
  }

  @Test
  void migrateOnMariaDbCreatesTheTablesOrPrintsTheirScript() throws Exception {
    String[] args = {"migrate", "--print-sql", "--jdbc-url", "jdbc:mariadb://127.0.0.1:1/nowhere",
        "--table-prefix", "tx_", "--buckets", "16"};
    StringWriter out = new StringWriter();
    CommandLine cli = TxboxCommand.commandLine(args, Map.of());
    cli.setOut(new PrintWriter(out, true));
    assertThat(cli.execute(args)).isZero();
    assertThat(out.toString()).contains("CREATE TABLE IF NOT EXISTS tx_outbox", "% 16;", "DELIMITER //")
        .doesNotContain("{prefix}", "{buckets}");

    try (TestMariaDb mariaDb = TestMariaDb.create()) {
      assertThat(run("relay", "--jdbc-url", mariaDb.jdbcUrl(), "--broker", "memory", "--memory-space", "s"))
          .isNotZero();
      assertThat(err.toString()).contains("invalid --jdbc-url or --table-prefix", "no txbox table txbox_outbox",
          "create them with txbox migrate");
      assertThat(run("migrate", "--jdbc-url", mariaDb.jdbcUrl())).isZero();
      assertThat(run("migrate", "--jdbc-url", mariaDb.jdbcUrl())).isZero();
      assertThat(mariaDb.queryLong("SELECT COUNT(*) FROM txbox_writer_epoch")).isEqualTo(1);
    }
  }

  @Test
  void exactlyOnceDeliveryIsRefusedWithExit2ByABrokerThatCannot() {
    String url = "jdbc:postgresql://127.0.0.1:1/app?user=app&password=s3cret";
    assertThat(run("relay", "--jdbc-url", url, "--broker", "rabbitmq", "--rabbitmq-uri", "amqp://127.0.0.1:1/",
        "--delivery", "exactly-once")).isEqualTo(2);
    assertThat(run("relay", "--jdbc-url", url, "--broker", "rabbitmq", "--rabbitmq-uri", "amqp://127.0.0.1:1/",
        "--source", "logical", "--delivery", "exactly-once")).isEqualTo(2);
    assertThat(run("relay", "--jdbc-url", url, "--kafka-bootstrap-servers", "127.0.0.1:1",
        "--delivery", "twice")).isEqualTo(2);
    assertThat(err.toString())
        .contains("delivery exactly-once is not possible with rabbitmq")
        .contains("delivery must be at-least-once or exactly-once, was 'twice'")
        .doesNotContain("s3cret");
  }

  @Test
  void onMariaDbWhatOnlyPostgresHasIsRefusedNamingWhatRuns() {
    String url = "jdbc:mariadb://127.0.0.1:1/app?user=app&password=s3cret";
    assertThat(run("logical", "status", "--jdbc-url", url)).isEqualTo(2);
    assertThat(run("relay", "--jdbc-url", url, "--broker", "memory", "--memory-space", "s", "--source", "logical"))
        .isEqualTo(2);
    assertThat(run("migrate", "--jdbc-url", url, "--schema", "shop")).isEqualTo(2);
    assertThat(run("relay", "--jdbc-url", url, "--broker", "memory", "--memory-space", "s", "--no-notify"))
        .isEqualTo(2);
    assertThat(err.toString())
        .contains("is a MariaDB URL, and this needs logical decoding: MariaDB has no logical decoding in txbox: use"
            + " the table relay. On MariaDB, txbox migrate, relay --source table, status, dead-letters, replay, audit"
            + " and console run")
        .contains("invalid --schema: they do not apply: on MariaDB the tables live in the database the JDBC URL names"
            + " (jdbc:mariadb://host:3306/database); drop them")
        .contains("invalid --no-notify: they do not apply: MariaDB has no LISTEN/NOTIFY in txbox: relays poll;"
            + " drop them")
        .doesNotContain("s3cret");
  }

  @Test
  void batchSizeZeroFailsBeforeConnectingAndNamesTheOption() {
    int code = run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere",
        "--kafka-bootstrap-servers", "127.0.0.1:1", "--batch-size", "0");
    assertThat(code).isEqualTo(2);
    assertThat(err.toString())
        .contains("invalid --batch-size (TXBOX_BATCH_SIZE)")
        .contains("batchSize must be >= 1 and <= 100000, was 0");
  }

  @Test
  void aBrokerModuleOnTheClassPathBringsItsOwnOptionsAndErrors() {
    // MemoryTransport is registered in this module's test resources only, as a fifth broker module would be
    assertThat(TxboxCommand.commandLine(new String[0], Map.of()).getSubcommands().get("relay")
        .getUsageMessage()).contains("--broker=<broker>", "Where events go: kafka, memory, nats, rabbitmq,", "--memory-space",
            "--memory-max-message-size", "--memory-client").doesNotContain("--memory-token");
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--broker", "memory")).isEqualTo(2);
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--broker", "memory",
        "--memory-space", "orders", "--memory-max-message-size", "0")).isEqualTo(2);
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--broker", "memroy")).isEqualTo(2);
    assertThat(err.toString())
        .contains("--memory-space (TXBOX_MEMORY_SPACE) is required with --broker memory")
        .contains("invalid --memory-max-message-size (TXBOX_MEMORY_MAX_MESSAGE_SIZE): it must be 1 or more, was 0")
        .contains("invalid --broker (TXBOX_BROKER): no broker named 'memroy' is installed: add the module that"
            + " provides it to the class path")
        .contains("installed: [kafka, memory, nats, rabbitmq, sqs]; the txbox command also loads the jars in its"
            + " plugins directory (TXBOX_PLUGINS, by default plugins beside txbox.jar)");
  }

  @Test
  void eachBrokerNeedsItsOwnServersAndTheErrorSaysWhich() {
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x")).isEqualTo(2);
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--broker", "nats",
        "--kafka-bootstrap-servers", "127.0.0.1:1")).isEqualTo(2);
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--broker", "nats",
        "--nats-servers", "nats://127.0.0.1:1", "--nats-ack-timeout", "1h")).isEqualTo(2);
    assertThat(err.toString())
        .contains("--kafka-bootstrap-servers (TXBOX_KAFKA_BOOTSTRAP_SERVERS) is required with --broker kafka")
        .contains("--nats-servers (TXBOX_NATS_SERVERS) is required with --broker nats")
        .contains("invalid --nats-ack-timeout (TXBOX_NATS_ACK_TIMEOUT): ackTimeout must be >= 1 ms and <= PT5M");
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--broker", "rabbitmq")).isEqualTo(2);
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--broker", "rabbitmq",
        "--rabbitmq-uri", "amqp://guest:guest@127.0.0.1:1", "--rabbitmq-max-message-size", "0")).isEqualTo(2);
    assertThat(err.toString())
        .contains("--rabbitmq-uri (TXBOX_RABBITMQ_URI) is required with --broker rabbitmq")
        .contains("invalid --rabbitmq-max-message-size (TXBOX_RABBITMQ_MAX_MESSAGE_SIZE): maxMessageSize must be >= 1");
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--broker", "sqs",
        "--sqs-endpoint", "localhost:9324")).isEqualTo(2);
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--broker", "sqs",
        "--sqs-region", "eu-west-1", "--sqs-max-message-size", "2000000")).isEqualTo(2);
    assertThat(err.toString())
        .contains("invalid --sqs-endpoint (TXBOX_SQS_ENDPOINT): endpoint must be a URL")
        .contains("invalid --sqs-max-message-size (TXBOX_SQS_MAX_MESSAGE_SIZE): maxMessageSize must be >= 8192"
            + " and <= 1048576 (SQS's limit), was 2000000");
  }

  @Test
  void settingsComeFromTheEnvironmentAndFromAPropertiesFile(@TempDir Path dir) throws Exception {
    Map<String, String> env = Map.of("TXBOX_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1", "TXBOX_LEASE_DURATION", "1s");
    assertThat(run(env, "relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x")).isEqualTo(2);
    assertThat(err.toString()).contains("invalid --lease-duration (TXBOX_LEASE_DURATION)")
        .contains("leaseDuration must be >= " + Relay.DEFAULT_HEARTBEAT_INTERVAL.multipliedBy(2)); // 2 heartbeats

    Path file = dir.resolve("txbox.properties");
    Files.writeString(file, "kafka-bootstrap-servers=127.0.0.1:1\nretry-max-attempts=0\n");
    assertThat(run("relay", "--config", file.toString(), "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x"))
        .isEqualTo(2);
    assertThat(err.toString()).contains("invalid --retry-max-attempts (TXBOX_RETRY_MAX_ATTEMPTS)");
  }

  @Test
  void anUnreachableDatabaseFailsAtOnceNamingTheJdbcUrl() {
    int code = run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere",
        "--kafka-bootstrap-servers", "127.0.0.1:1");
    assertThat(code).isEqualTo(1);
    assertThat(err.toString()).contains("cannot connect to the database at jdbc:postgresql://127.0.0.1:1/nowhere")
        .contains("--jdbc-url, TXBOX_JDBC_URL");
  }

  @Test
  void aListenUrlOfAnotherDatabaseIsRefusedNamingTheOptionAndTheKindOfUrl() {
    int code = run("relay", "--jdbc-url", TestDatabase.jdbcUrl(), "--kafka-bootstrap-servers", "127.0.0.1:1",
        "--listen-jdbc-url", "jdbc:mariadb://db:3306/shop?password=s3cr3t");
    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).contains("invalid --listen-jdbc-url (TXBOX_LISTEN_JDBC_URL):"
        + " 'jdbc:mariadb://db:3306/shop?password=***' is not a PostgreSQL JDBC URL: give one such as"
        + " jdbc:postgresql://host:5432/database").doesNotContain("s3cr3t");
  }

  @Test
  void aListenUrlTheDriverCannotReadIsRefusedNamingTheOptionWithoutThePassword() {
    int code = run("relay", "--jdbc-url", TestDatabase.jdbcUrl(), "--kafka-bootstrap-servers", "127.0.0.1:1",
        "--listen-jdbc-url", "jdbc:postgresql://db:notaport/shop?password=s3cr3t");
    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).contains("invalid --listen-jdbc-url (TXBOX_LISTEN_JDBC_URL): the PostgreSQL driver"
        + " cannot read the JDBC URL").doesNotContain("s3cr3t");
  }

  @Test
  void aJdbcUrlTheDriverCannotReadIsABadSettingNotADriverStackTrace() {
    int code = run("relay", "--jdbc-url", "jdbc:mariadb://[::1:3306/shop?password=s3cr3t",
        "--kafka-bootstrap-servers", "127.0.0.1:1");
    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).contains("invalid --jdbc-url (TXBOX_JDBC_URL): the driver cannot read"
        + " jdbc:mariadb://[::1:3306/shop?password=***: write it as jdbc:mariadb://host:3306/database")
        .doesNotContain("begin 1").doesNotContain("s3cr3t");
  }

  @Test
  void everySubcommandOfDeadLettersIsDescribedWholeInItsHelp() {
    String[] args = {"dead-letters", "--help"};
    StringWriter out = new StringWriter();
    CommandLine cli = TxboxCommand.commandLine(args, Map.of());
    cli.setOut(new PrintWriter(out, true));
    assertThat(cli.execute(args)).isZero();
    assertThat(out.toString().replaceAll("\\s+", " "))
        .contains("retry Puts outbox dead letters back into the log with their ids; with --consumer, asks the running"
            + " consumer to retry its parked keys in order. A dry run without --execute.");
  }

  @Test
  void aWrongTablePrefixFailsAtOnceNamingTheSetting() {
    assertThat(run("migrate", "--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema())).isZero();
    int code = run("relay", "--jdbc-url", TestDatabase.jdbcUrl(), "--schema", db.schema(),
        "--table-prefix", "nope_", "--kafka-bootstrap-servers", "127.0.0.1:1");
    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).contains("no txbox tables at " + db.schema() + ".nope_outbox").contains("--table-prefix")
        .doesNotContain("\tat ");
  }

  @Test
  void aDurationThatIsNotOneFailsNamingTheOption() {
    int code = run("relay", "--kafka-bootstrap-servers", "127.0.0.1:1", "--lease-duration", "5 parsecs");
    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).contains("--lease-duration").contains("use a number with ms, s, m, h or d");
  }

  @Test
  void unknownKeysInTheConfigFileStopMigrateAndRelayNamingEachWithTheClosestOption(@TempDir Path dir)
      throws Exception {
    Path file = dir.resolve("txbox.properties");
    Files.writeString(file, "batch-szie=0\nbukets=0\nkafka-bootstrap-servers=127.0.0.1:1\n");
    assertThat(run("migrate", "--config", file.toString(), "--jdbc-url", TestDatabase.jdbcUrl(),
        "--schema", db.schema())).isEqualTo(2);
    assertThat(err.toString())
        .contains("migrate: unknown setting 'batch-szie' in " + file + " (--config): did you mean 'batch-size'")
        .contains("migrate: unknown setting 'bukets' in " + file + " (--config): did you mean 'buckets'");
    assertThat(run("relay", "--config", file.toString())).isEqualTo(2);
    assertThat(err.toString()).contains("relay: unknown setting 'batch-szie'");
    try (var c = db.dataSource().getConnection();
        var rs = c.getMetaData().getTables(null, db.schema(), "txbox_outbox", null)) {
      assertThat(rs.next()).as("migrate created nothing").isFalse();
    }
  }

  @Test
  void theVariablesKubernetesAddsForAServiceNamedTxboxAreIgnoredWhileATypoStillStops() {
    Map<String, String> env = new java.util.HashMap<>(RelayDeploymentExampleTest.serviceLinks("txbox", "10.96.0.17", 9464));
    env.put("TXBOX_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1");
    assertThat(run(env, "relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere")).isEqualTo(1);
    assertThat(err.toString()).contains("cannot connect to the database").doesNotContain("unknown environment variable");
    err.getBuffer().setLength(0);
    env.put("TXBOX_PORTS", "9464");
    assertThat(run(env, "relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere")).isEqualTo(2);
    assertThat(err.toString()).contains("unknown environment variable TXBOX_PORTS").doesNotContain("TXBOX_SERVICE_HOST");
  }

  @Test
  void servicesNamedTxboxSomethingNeitherStopTheRelayNorSetItsOptionsThroughTheirLinks() {
    Map<String, String> env = new java.util.HashMap<>();
    for (String service : List.of("txbox-relay", "txbox-db", "txbox-console", "txbox-http")) {
      env.putAll(RelayDeploymentExampleTest.serviceLinks(service, "10.96.0.17", 9464));
    }
    env.put("TXBOX_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1");
    // TXBOX_HTTP_PORT=tcp://10.96.0.17:9464 is the txbox-http Service's link, not --http-port
    assertThat(run(env, "relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere")).isEqualTo(1);
    assertThat(err.toString()).contains("cannot connect to the database")
        .doesNotContain("unknown environment variable", "http-port");
    err.getBuffer().setLength(0);
    env.put("TXBOX_HTTP_PORT", "tcp-ish"); // set in the pod's spec, where it wins over the link: read, and refused
    assertThat(run(env, "relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere")).isEqualTo(2);
    assertThat(err.toString()).contains("--http-port");
  }

  @Test
  void unknownTxboxEnvironmentVariablesStopTheCommandNamingEach() {
    Map<String, String> env = Map.of("TXBOX_BATCH_SIZ", "10", "TXBOX_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1",
        "TXBOX_TEST_JDBC_URL", "jdbc:postgresql://x/y", "TXBOX_TEST_KAFKA", "127.0.0.1:9092", "PATH", "/bin");
    assertThat(run(env, "relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x")).isEqualTo(2);
    assertThat(err.toString())
        .contains("relay: unknown environment variable TXBOX_BATCH_SIZ: did you mean 'batch-size' (TXBOX_BATCH_SIZE)?")
        .doesNotContain("TXBOX_KAFKA_BOOTSTRAP_SERVERS").doesNotContain("TXBOX_TEST_JDBC_URL")
        .doesNotContain("TXBOX_TEST_KAFKA");
  }

  @Test
  void aBadProducerPropertyIsToldAsKafkaProducer() {
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--kafka-bootstrap-servers",
        "127.0.0.1:1", "--kafka-producer", "acks=1")).isEqualTo(2);
    assertThat(err.toString()).contains("relay: invalid --kafka-producer (TXBOX_KAFKA_PRODUCER): acks must be all")
        .doesNotContain("--acks");
  }

  @Test
  void aMisspeltProducerPropertyStopsTheRelayNamingTheClosestOne() {
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--kafka-bootstrap-servers",
        "127.0.0.1:1", "--kafka-producer", "lnger.ms=5")).isEqualTo(2);
    assertThat(err.toString()).contains("relay: invalid --kafka-producer (TXBOX_KAFKA_PRODUCER):"
        + " unknown producer property 'lnger.ms': did you mean 'linger.ms'?");
  }

  @Test
  void aProducerPropertyWithABadValueStopsTheRelayWithTheClientsReason() {
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--kafka-bootstrap-servers",
        "127.0.0.1:1", "--kafka-producer", "linger.ms=abc")).isEqualTo(2);
    assertThat(err.toString()).contains("invalid --kafka-producer (TXBOX_KAFKA_PRODUCER): producer property"
        + " linger.ms: Invalid value abc for configuration linger.ms: Not a number of type LONG")
        .doesNotContain("Failed to construct");
  }

  @Test
  void oneVariableOrConfigLineTakesSeveralProducerPropertiesSeparatedByCommas(@TempDir Path dir) throws Exception {
    // acks=1 is refused only if it was split off; the protocols' comma stays in their value
    Map<String, String> env = Map.of("TXBOX_KAFKA_PRODUCER", "linger.ms=5,ssl.enabled.protocols=TLSv1.2,TLSv1.3,acks=1");
    assertThat(run(env, "relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--kafka-bootstrap-servers",
        "127.0.0.1:1")).isEqualTo(2);
    assertThat(err.toString()).contains("invalid --kafka-producer (TXBOX_KAFKA_PRODUCER): acks must be all");

    Path file = dir.resolve("txbox.properties");
    Files.writeString(file, "kafka-bootstrap-servers=127.0.0.1:1\nkafka-producer=compression.type=lz4,lnger.ms=5\n");
    assertThat(run("relay", "--config", file.toString(), "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x"))
        .isEqualTo(2);
    assertThat(err.toString()).contains("unknown producer property 'lnger.ms': did you mean 'linger.ms'?");
  }

  @Test
  void aConfigFileThatCannotBeParsedIsNamedWithTheOption(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("broken.properties");
    Files.writeString(file, "jdbc-url=\\uZZZZ\n");
    assertThatThrownBy(() -> TxboxCommand.commandLine(new String[] {"relay", "--config", file.toString()}, Map.of()))
        .hasMessageContaining("--config (TXBOX_CONFIG): cannot read " + file);
  }

  @Test
  void passwordsInTheJdbcUrlNeverReachTheErrorOutput() {
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=app&password=s3cr3t-pw",
        "--kafka-bootstrap-servers", "127.0.0.1:1")).isEqualTo(1);
    assertThat(err.toString()).contains("password=***").doesNotContain("s3cr3t-pw");
  }
}
