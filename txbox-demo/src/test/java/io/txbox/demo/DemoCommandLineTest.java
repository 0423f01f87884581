package io.txbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.server.Main;
import io.txbox.testkit.JdkNeutral;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestMariaDb;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code java -jar txbox-demo.jar} with bad settings: exit 2 and the option named, before anything starts. */
@JdkNeutral
class DemoCommandLineTest {
  private final StringWriter err = new StringWriter();

  private int run(String... args) {
    CommandLine cli = Main.commandLine(new DemoCommand(), Map.of(), args);
    cli.setErr(new PrintWriter(err, true));
    return cli.execute(args);
  }

  @Test
  void demoRefusesBadSettingsBeforeStartingAnything() {
    assertThat(run("--events", "0")).isEqualTo(2);
    assertThat(run("--consumers", "9")).isEqualTo(2);
    assertThat(run("--broker", "nats", "--consumers", "2")).isEqualTo(2);
    assertThat(run("--broker", "nats", "--kafka-bootstrap-servers", "127.0.0.1:1")).isEqualTo(2);
    assertThat(run("quickstart", "--events", "0")).isEqualTo(2);
    assertThat(run("--database", "mariadb")).isEqualTo(2);
    assertThat(run("--database", "mariadb", "--jdbc-url", "jdbc:mariadb://db/?user=u&password=hunter2",
        "--source", "logical")).isEqualTo(2);
    assertThat(err.toString())
        .contains("--database mariadb needs --jdbc-url of a MariaDB server, such as"
            + " jdbc:mariadb://127.0.0.1:3306/?user=root (there is no embedded MariaDB)")
        .contains("--source logical is PostgreSQL's: on --database mariadb the relays read the table")
        .doesNotContain("hunter2")
        .contains("--consumers must be 1 with --broker nats")
        .contains("--kafka-bootstrap-servers does not go with --broker nats")
        .contains("--events must be 1 to 100,000,000, was 0")
        .contains("--consumers must be 1 to 8 (the topic's partitions), was 9")
        .contains("quickstart: invalid --events (TXBOX_EVENTS): events and keys must be >= 1");
  }

  @Test
  void quickstartRunsOnMariaDbThroughAGivenKafkaAndLeavesNoTableBehind() throws Exception {
    try (TestMariaDb maria = TestMariaDb.create()) {
      assertThat(run("quickstart", "--events", "300", "--keys", "10", "--jdbc-url", maria.jdbcUrl(),
          "--kafka-bootstrap-servers", KafkaBroker.shared().bootstrapServers())).as("%s", err).isZero();
      try (Connection c = maria.dataSource().getConnection(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE()")) {
        rs.next();
        assertThat(rs.getInt(1)).as("tables left in " + maria.database()).isZero();
      }
    }
  }

  @Test
  void quickstartNeitherListsNorTakesTheOptionsThatNameAnApplicationsTables() {
    StringWriter help = new StringWriter();
    CommandLine cli = Main.commandLine(new DemoCommand(), Map.of(), "quickstart", "--help");
    cli.setOut(new PrintWriter(help, true));
    cli.execute("quickstart", "--help");
    assertThat(help.toString()).contains("--kafka-bootstrap-servers", "--jdbc-url").doesNotContain("--schema",
        "--table-prefix");

    assertThat(run("quickstart", "--schema", "shop")).isEqualTo(2);
    assertThat(err.toString()).contains("--schema is not taken: it names an application's tables");
  }

  @Test
  void theMariaDbRunNamesItsOwnDatabaseInTheUrlItWasGiven() {
    assertThat(Demo.withDatabase("jdbc:mariadb://127.0.0.1:3306/?user=root", "demo"))
        .isEqualTo("jdbc:mariadb://127.0.0.1:3306/demo?user=root");
    assertThat(Demo.withDatabase("jdbc:mariadb://db:3306/shop?user=root&password=x", "demo"))
        .isEqualTo("jdbc:mariadb://db:3306/demo?user=root&password=x");
    assertThat(Demo.withDatabase("jdbc:mariadb://db", "demo")).isEqualTo("jdbc:mariadb://db/demo");
    assertThat(Demo.withDatabase("jdbc:mariadb://db?user=u", "demo")).isEqualTo("jdbc:mariadb://db/demo?user=u");
  }

  @Test
  void aRunWithResultsJsonWritesItsReportAndSettings(@TempDir Path dir) throws Exception {
    Path results = dir.resolve("end-to-end.json");
    assertThat(run("--no-chaos", "--events", "300", "--rate", "300", "--warm-up", "0s", "--relays", "1",
        "--consumers", "1", "--jdbc-url", TestDatabase.jdbcUrl(),
        "--kafka-bootstrap-servers", KafkaBroker.shared().bootstrapServers(), "--results-json", results.toString()))
        .as("%s", err).isZero();
    JsonNode json = new ObjectMapper().readTree(results.toFile());
    assertThat(json.path("command").asText()).contains("--rate 300").doesNotContain("--results-json")
        .doesNotContain(results.toString());
    assertThat(json.path("settings").path("rate").asInt()).isEqualTo(300);
    assertThat(json.path("report").path("applied").asLong()).isEqualTo(300);
    assertThat(json.path("report").path("lost").asLong()).isZero();
    assertThat(json.path("report").path("latency").path("p99").asDouble()).isPositive();
  }
}
