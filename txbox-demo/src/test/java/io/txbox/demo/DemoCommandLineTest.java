package io.txbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.server.Main;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code java -jar txbox-demo.jar} with bad settings: exit 2 and the option named, before anything starts. */
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
    assertThat(err.toString())
        .contains("--consumers must be 1 with --broker nats")
        .contains("--kafka-bootstrap-servers does not go with --broker nats")
        .contains("--events must be 1 to 100,000,000, was 0")
        .contains("--consumers must be 1 to 8 (the topic's partitions), was 9")
        .contains("quickstart: invalid --events (TXBOX_EVENTS): events and keys must be >= 1");
  }
}
