package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.testkit.ChildProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every command, run as a process with a password where a user may put one, prints it nowhere:
 * not in its own errors, not in a driver's, not when the command line cannot be parsed.
 */
class CommandLineSecretsTest {
  private static final String SECRET = "S3cretPw4";
  @TempDir Path dir;

  @ParameterizedTest
  @ValueSource(strings = {"status", "console", "relay", "migrate", "audit", "dead-letters list", "replay"})
  void aPasswordBeforeTheHostOfTheJdbcUrlIsRefusedWithoutBeingPrinted(String command) throws Exception {
    Finished run = run(command, Map.of(), "--jdbc-url", "jdbc:postgresql://app:" + SECRET + "@db.invalid:5432/test");

    assertThat(run.exitCode()).as(run.output()).isEqualTo(2);
    assertThat(run.output()).doesNotContain(SECRET).contains("--jdbc-url", "--db-password", "***@db.invalid");
  }

  /** In this JVM, for many passwords at little cost; what a driver logs itself is proven by a process below. */
  @ParameterizedTest
  @ValueSource(strings = {"ab'cdSecret9", "ab\"cdSecret9", "ab cdSecret9", "ab/cdSecret9", "ab+cdSecret9",
      "ab@cdSecret9"})
  void aPasswordBeforeTheHostIsMaskedWholeWhateverItHolds(String password) {
    for (String url : List.of("jdbc:postgresql://app:" + password + "@db.invalid:5432/test",
        "jdbc:mariadb://app:" + password + "@db.invalid:3306/test")) {
      Finished status = runHere("status", "--jdbc-url", url);
      assertThat(status.exitCode()).as(status.output()).isNotZero();
      assertThat(status.output()).as(url).doesNotContain("Secret9", "cdSec");
    }
    Finished listen = runHere("relay", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/test", "--no-http",
        "--broker", "nats", "--nats-servers", "nats://127.0.0.1:4222",
        "--listen-jdbc-url", "jdbc:postgresql://app:" + password + "@db.invalid:5432/test");
    assertThat(listen.output()).doesNotContain("Secret9", "cdSec");
  }

  @Test
  void theDriversOwnWarningAboutAUrlItCannotParseNeverPrintsThePassword() throws Exception {
    Finished run = run("status", Map.of(), "--jdbc-url", "jdbc:postgresql://app:ab/cdSecret9@db.invalid:5432/test");
    assertThat(run.exitCode()).as(run.output()).isNotZero();
    assertThat(run.output()).doesNotContain("Secret9", "cdSec");
  }

  private Finished runHere(String command, String... args) {
    java.io.StringWriter out = new java.io.StringWriter();
    List<String> all = new ArrayList<>(List.of(command));
    all.addAll(List.of(args));
    int code = Main.run(new TxboxCommand(), Map.of(), new java.io.PrintWriter(out, true),
        new java.io.PrintWriter(out, true), all.toArray(String[]::new));
    return new Finished(code, out.toString());
  }

  @Test
  void aBrokerUriWhosePasswordHoldsACommaOrQuoteIsRefusedWithoutPrintingIt() throws Exception {
    for (List<String> broker : List.of(List.of("--broker", "nats", "--nats-servers", "nats://u:Nats,Secret9@127.0.0.1:4222"),
        List.of("--broker", "rabbitmq", "--rabbitmq-uri", "amqp://u:ab cdSecret9@127.0.0.1:5672/"),
        List.of("--broker", "sqs", "--sqs-endpoint", "http://u:ab'cdSecret9@127.0.0.1:1/"))) {
      List<String> args = new ArrayList<>(List.of("--jdbc-url", "jdbc:postgresql://127.0.0.1:1/test", "--no-http"));
      args.addAll(broker);
      Finished run = run("relay", Map.of(), args.toArray(String[]::new));
      assertThat(run.exitCode()).as(run.output()).isNotZero();
      assertThat(run.output()).as(broker.toString()).doesNotContain("Secret9", "cdSec");
    }
  }

  @Test
  void aClientPropertyWithAnUnbalancedQuoteIsNeverPrinted() throws Exception {
    Path config = dir.resolve("txbox.properties");
    Files.writeString(config, "kafka-producer=ssl.key.password=Sec\"ret99\n");
    String jaas = "sasl.jaas.config=PlainLoginModule required username=\"app\" password=\"Sec ret99;";
    String[] common = {"--jdbc-url", "jdbc:postgresql://127.0.0.1:1/test", "--kafka-bootstrap-servers", "127.0.0.1:1"};
    for (Finished run : List.of(run("replay", Map.of(), concat(common, "--kafka-producer", "ssl.key.password=Sec\"ret99")),
        run("replay", Map.of(), concat(common, "--kafka-producer", jaas)),
        run("replay", Map.of("TXBOX_KAFKA_PRODUCER", "ssl.key.password=Sec\"ret99"), common),
        run("replay", Map.of(), concat(common, "--config", config.toString())),
        run("replay", Map.of(), concat(common, "--kafka-producer", "Sec\"ret99")))) {
      assertThat(run.output()).doesNotContain("ret99", "Unbalanced");
    }
  }

  private static String[] concat(String[] first, String... more) {
    List<String> all = new ArrayList<>(List.of(first));
    all.addAll(List.of(more));
    return all.toArray(String[]::new);
  }

  @Test
  void theSameUrlFromTheEnvironmentOrTheConfigFileIsRefusedAlike() throws Exception {
    String url = "jdbc:postgresql://app:" + SECRET + "@db.invalid:5432/test";
    Path config = dir.resolve("txbox.properties");
    Files.writeString(config, "jdbc-url=" + url + "\n");

    for (Finished run : List.of(run("status", Map.of("TXBOX_JDBC_URL", url)),
        run("status", Map.of(), "--config", config.toString()))) {
      assertThat(run.exitCode()).as(run.output()).isEqualTo(2);
      assertThat(run.output()).doesNotContain(SECRET).contains("--jdbc-url");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"status", "relay", "migrate"})
  void aDatabaseThatCannotBeReachedIsReportedWithThePasswordMasked(String command) throws Exception {
    Finished run = run(command, Map.of("TXBOX_DB_PASSWORD", SECRET),
        "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/test?user=app&password=" + SECRET);

    assertThat(run.exitCode()).as(run.output()).isNotZero();
    assertThat(run.output()).doesNotContain(SECRET).contains("password=***");
  }

  @ParameterizedTest
  @ValueSource(strings = {"se,ret99", "se;ret99", "se'ret99", "se ret99"})
  void aPasswordHoldingACommaSemicolonQuoteOrSpaceIsMaskedWholeForPostgresqlAndMariaDb(String password)
      throws Exception {
    for (String url : List.of("jdbc:postgresql://127.0.0.1:1/test?user=app&password=" + password,
        "jdbc:mariadb://127.0.0.1:1/test?user=app&password=" + password)) {
      Finished run = run("relay", Map.of(), "--jdbc-url", url);
      assertThat(run.exitCode()).as(run.output()).isNotZero();
      assertThat(run.output()).as(url).doesNotContain("ret99").contains("password=***");
    }
  }

  @Test
  void aMistypedOptionIsNamedAndItsValueNeverRepeated() throws Exception {
    for (List<String> args : List.of(List.of("--db-pasword", "CliSecret16"), List.of("--db-pasword=CliSecret16"),
        List.of("--sqs-secret-access-key", "CliSecret16"))) {
      Finished run = run("status", Map.of(), args.toArray(String[]::new));
      assertThat(run.exitCode()).as(run.output()).isEqualTo(2);
      assertThat(run.output()).as(args.toString()).doesNotContain("CliSecret16")
          .contains("unknown option(s) '" + args.get(0).split("=")[0] + "'");
    }
    assertThat(run("status", Map.of(), "--db-pasword", "x").output()).contains("did you mean", "--db-password");
  }

  @Test
  void anArgumentThatCannotBeParsedIsOneLineWithItsSecretsMasked() throws Exception {
    Finished run = run("dead-letters purge", Map.of(),
        "--jdbc-url", "jdbc:postgresql://db/app?user=app&password=" + SECRET);

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.output()).as("the options by name, no value repeated, masked or not")
        .doesNotContain(SECRET).contains("'--jdbc-url'", "txbox dead-letters --help");
    assertThat(run.output().strip().lines()).as(run.output()).hasSize(1);
  }

  private record Finished(int exitCode, String output) {}

  private Finished run(String command, Map<String, String> environment, String... args) throws Exception {
    Path log = Files.createTempFile(dir, "txbox", ".log");
    List<String> all = new ArrayList<>(List.of(command.split(" ")));
    all.addAll(List.of(args));
    if (command.equals("relay") && !all.contains("--broker")) {
      all.addAll(List.of("--broker", "nats", "--nats-servers", "nats://127.0.0.1:4222", "--no-http"));
    }
    Process p = ChildProcess.start(List.of("-Xmx128m", "-XX:TieredStopAtLevel=1"), System.getProperty("java.class.path"),
        Main.class.getName(), all, environment, log);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("%s ends by itself", command).isTrue();
    return new Finished(p.exitValue(), Files.readString(log));
  }
}
