package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.txbox.testkit.NatsServer;
import io.txbox.testkit.TestDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Every option of every command, fed values it cannot take: each is refused with exit code 2 in one
 * line naming the option, no stack trace, and nothing written to the database. The options come
 * from the commands themselves, so that a new option is tested without anyone listing it here.
 */
class BadSettingsTest {
  private static final OutboxSchema schema = new OutboxSchema();
  /** Options whose every value is fine (a filter, a name) or that only say where to look. */
  private static final List<String> ANY_TEXT = List.of("--subscription", "--type", "--destination", "--key",
      "--error", "--consumer", "--instance-id", "--to-destination", "--db-user", "--db-password", "--table-prefix",
      "--http-address", "--sqs-region", "--publication", "--slot", "--outbox", "--tag");

  @AfterAll
  static void dropSchema() {
    schema.close();
  }

  @TestFactory
  Stream<DynamicTest> everyOptionRefusesWhatItCannotTakeInOneLineAndChangesNothing() {
    CommandLine root = TxboxCommand.commandLine(new String[0], Map.of());
    List<DynamicTest> tests = new ArrayList<>();
    collect(root, tests);
    return tests.stream();
  }

  private void collect(CommandLine command, List<DynamicTest> tests) {
    CommandSpec spec = command.getCommandSpec();
    if (command.getSubcommands().isEmpty() || spec.userObject() instanceof Runnable
        || spec.userObject() instanceof java.util.concurrent.Callable) {
      for (OptionSpec option : spec.options()) {
        if (spec.name().equals("migrate") && option.longestName().equals("--schema")) {
          continue; // migrate creates the schema it is given: no name of one is wrong there
        }
        for (String bad : badValues(option)) {
          List<String> args = new ArrayList<>(List.of(spec.qualifiedName().replaceFirst("^txbox ?", "").split(" ")));
          args.removeIf(String::isEmpty);
          args.addAll(baseline(spec.name(), option.longestName()));
          args.addAll(List.of(option.longestName(), bad));
          tests.add(DynamicTest.dynamicTest(String.join(" ", args), () -> refused(option.longestName(), args)));
        }
      }
    }
    command.getSubcommands().values().stream().distinct().forEach(sub -> collect(sub, tests));
  }

  /**
   * What makes the command run for real, so that a bad value let through would show: the test's
   * database and schema, a broker that takes connections, an event id for {@code show}, no endpoint.
   */
  private static List<String> baseline(String command, String tested) {
    List<String> args = new ArrayList<>();
    if (!tested.equals("--jdbc-url")) {
      args.addAll(List.of("--jdbc-url", TestDatabase.jdbcUrl()));
    }
    if (!tested.equals("--schema")) {
      args.addAll(List.of("--schema", schema.name()));
    }
    if (command.equals("relay") || command.equals("replay") || command.equals("console")) {
      args.addAll(broker(tested));
    }
    if ((command.equals("relay") || command.equals("console")) && !tested.startsWith("--http")) {
      args.add("--no-http");
    }
    if (command.equals("console") && !tested.equals("--listen")) {
      args.addAll(List.of("--listen", "127.0.0.1:0"));
    }
    if (command.equals("show") && !tested.equals("--id")) {
      args.addAll(List.of("--id", UUID.randomUUID().toString()));
    }
    return args;
  }

  /** The broker the tested option belongs to, else the machine's NATS. */
  private static List<String> broker(String tested) {
    if (tested.equals("--broker")) {
      return List.of();
    }
    if (tested.startsWith("--kafka")) {
      return tested.equals("--kafka-bootstrap-servers") ? List.of() : List.of("--kafka-bootstrap-servers", "127.0.0.1:1");
    }
    if (tested.startsWith("--rabbitmq")) {
      return List.of("--broker", "rabbitmq", "--rabbitmq-uri", "amqp://guest:guest@127.0.0.1:5672");
    }
    if (tested.startsWith("--sqs")) {
      return List.of("--broker", "sqs", "--sqs-region", "eu-west-1", "--sqs-endpoint", "http://127.0.0.1:1");
    }
    if (tested.startsWith("--memory")) {
      return List.of("--broker", "memory", "--memory-space", "bad-settings");
    }
    return List.of("--broker", "nats", "--nats-servers", NatsServer.MACHINE_URL);
  }

  private static List<String> badValues(OptionSpec option) {
    String name = option.longestName();
    Class<?> type = option.type();
    if (option.arity().max() == 0 || option.usageHelp() || option.versionHelp() || ANY_TEXT.contains(name)) {
      return List.of();
    }
    if (type == int.class || type == Integer.class || type == long.class || type == Long.class) {
      return List.of("many", "-1", "99999999999999999999");
    }
    if (type == Duration.class) {
      return List.of("5q", "PT-5M", "100000d");
    }
    if (type == Instant.class) {
      return List.of("yesterday");
    }
    if (type == UUID.class) {
      return List.of("not-an-id");
    }
    if (type.isEnum()) {
      return List.of("nosuch");
    }
    if (type == Path.class || name.equals("--config")) {
      return List.of("/nonexistent/txbox.properties");
    }
    if (type == Map.class) {
      return List.of("no-equals-sign");
    }
    return switch (name) {
      case "--jdbc-url" -> List.of("not-a-url", "jdbc:postgresql://app:pw@127.0.0.1/x");
      case "--schema" -> List.of("no_such_schema", "x\"; DROP TABLE y; --");
      case "--listen" -> List.of("nowhere", "127.0.0.1:99999");
      case "--nats-servers" -> List.of("not a url");
      case "--rabbitmq-uri" -> List.of("http://not-amqp");
      case "--kafka-bootstrap-servers" -> List.of("");
      case "--allowed-host", "--operator" -> List.of("a\u001b[2Jb".repeat(40));
      case "--sqs-endpoint" -> List.of("not a url");
      default -> List.of("\u0000");
    };
  }

  private static void refused(String option, List<String> args) throws Exception {
    StringWriter err = new StringWriter();
    StringWriter out = new StringWriter();
    long writtenBefore = written();
    int code = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> Main.run(new TxboxCommand(), Map.of(),
        new PrintWriter(out, true), new PrintWriter(err, true), args.toArray(String[]::new)),
        () -> "ran instead of refusing: " + args);

    String printed = err.toString().strip();
    assertThat(code).as("exit code of %s; printed: %s%s", args, printed, out).isEqualTo(2);
    assertThat(printed.lines()).as("one line from %s: %s", args, printed).hasSize(1);
    assertThat(printed).as("%s names the option", args).contains(option.substring(2))
        .doesNotContain("Exception", "\tat ", "\u001b");
    assertThat(written()).as("nothing written by %s", args).isEqualTo(writtenBefore);
  }

  private static long written() throws Exception {
    return schema.db.queryLong("SELECT count(*) FROM {s}.txbox_audit")
        + schema.db.queryLong("SELECT count(*) FROM {s}.txbox_subscription");
  }
}
