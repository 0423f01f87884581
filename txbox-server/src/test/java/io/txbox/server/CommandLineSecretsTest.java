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
    assertThat(run.output()).doesNotContain(SECRET).contains("--jdbc-url", "--db-password", "app:***@db.invalid");
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
    if (command.equals("relay")) {
      all.addAll(List.of("--broker", "nats", "--nats-servers", "nats://127.0.0.1:4222", "--no-http"));
    }
    Process p = ChildProcess.start(List.of("-Xmx128m", "-XX:TieredStopAtLevel=1"), System.getProperty("java.class.path"),
        Main.class.getName(), all, environment, log);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("%s ends by itself", command).isTrue();
    return new Finished(p.exitValue(), Files.readString(log));
  }
}
