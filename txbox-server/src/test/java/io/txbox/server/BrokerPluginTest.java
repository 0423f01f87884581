package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.txbox.Message;
import io.txbox.testkit.TestDatabase;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A broker of somebody else's, added to the {@code txbox} command as its users would: the whole
 * example of docs/brokers.md compiled into a jar, the jar put in a plugins directory, the relay
 * started with {@code TXBOX_PLUGINS} and {@code --broker file}.
 */
class BrokerPluginTest {
  private static final Path GUIDE = Path.of("..", "docs", "brokers.md");
  private static final Pattern EXAMPLE = Pattern.compile("(?ms)^```java\\n(package com\\.example\\.txbox;.*?)^```$");

  @TempDir Path dir;
  private final OutboxSchema schema = new OutboxSchema();
  private final RelayProcesses processes = new RelayProcesses();

  @AfterEach
  void stop() {
    processes.close();
    schema.close();
  }

  @Test
  void aBrokerModuleInThePluginsDirectoryIsABrokerOfTheCommand() throws Exception {
    Path plugins = Files.createDirectories(dir.resolve("plugins"));
    buildThePluginOfTheGuide(plugins.resolve("txbox-file.jar"));
    // Writable by their owner only, whatever this machine's umask: others' are refused.
    Files.setPosixFilePermissions(plugins, PosixFilePermissions.fromString("rwxr-xr-x"));
    Files.setPosixFilePermissions(plugins.resolve("txbox-file.jar"), PosixFilePermissions.fromString("rw-r--r--"));
    Path events = dir.resolve("events.jsonl");
    processes.start(dir, List.of(), Map.of(Plugins.VARIABLE, plugins.toString()), List.of(
        "--jdbc-url", TestDatabase.jdbcUrl(), "--schema", schema.name(), "--broker", "file",
        "--file-path", events.toString(), "--idle-interval", "20ms"));

    List<Message> sent = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      sent.add(Message.builder().type("OrderPlaced").destination("orders").key("order-" + i)
          .payload(("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8)).build());
    }
    schema.send(sent);

    await().atMost(Duration.ofSeconds(60)).until(() -> Files.exists(events)
        && Files.readAllLines(events).size() >= sent.size());
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < sent.size(); i++) {
      expected.add(sent.get(i).id() + " OrderPlaced order-" + i + " {\"n\":" + i + "}");
    }
    assertThat(Files.readAllLines(events)).as("each key in its own bucket: any order").hasSameElementsAs(expected)
        .hasSize(sent.size());
  }

  @Test
  void theOptionsOfABrokerWhosePluginIsMissingAreToldAsAMissingBrokerNotJustUnknown() {
    StringWriter err = new StringWriter();
    int code = Main.run(new TxboxCommand(), Map.of(), new PrintWriter(new StringWriter()), new PrintWriter(err, true),
        "relay", "--jdbc-url", TestDatabase.jdbcUrl(), "--broker", "filelog", "--filelog-dir", "/tmp/events");

    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).contains("unknown option(s) '--filelog-dir'", "no broker named 'filelog' is installed",
        "installed: ", "kafka", "TXBOX_PLUGINS", "plugins beside txbox.jar");
    StringWriter typo = new StringWriter();
    Main.run(new TxboxCommand(), Map.of(), new PrintWriter(new StringWriter()), new PrintWriter(typo, true),
        "relay", "--jdbc-url", TestDatabase.jdbcUrl(), "--broker", "nats", "--nats-severs", "nats://x");
    assertThat(typo.toString()).as("an installed broker's mistyped option").contains("unknown option(s) '--nats-severs'")
        .doesNotContain("is installed");
  }

  @Test
  void aPluginsDirectoryThatDoesNotExistIsABadSetting() {
    StringWriter err = new StringWriter();
    int code = Main.run(new TxboxCommand(), Map.of(Plugins.VARIABLE, dir.resolve("nowhere").toString()),
        new PrintWriter(new StringWriter()), new PrintWriter(err, true), "relay", "--help");
    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).contains("invalid TXBOX_PLUGINS: " + dir.resolve("nowhere") + " is no directory");
  }

  @Test
  void eachCommandLineKnowsTheBrokersOfItsOwnPluginsDirectory() throws Exception {
    Path plugins = Files.createDirectories(dir.resolve("plugins"));
    Files.setPosixFilePermissions(plugins, PosixFilePermissions.fromString("rwxr-xr-x"));
    buildThePluginOfTheGuide(plugins.resolve("txbox-file.jar"));
    Files.setPosixFilePermissions(plugins.resolve("txbox-file.jar"), PosixFilePermissions.fromString("rw-r--r--"));
    picocli.CommandLine withPlugin = Main.commandLine(new TxboxCommand(), Map.of(Plugins.VARIABLE, plugins.toString()));
    picocli.CommandLine without = Main.commandLine(new TxboxCommand(), Map.of()); // built after: it changes nothing above
    assertThat(withPlugin.getSubcommands().get("relay").getUsageMessage()).contains("Where events go: file, kafka");
    assertThat(without.getSubcommands().get("relay").getUsageMessage()).contains("Where events go: kafka")
        .doesNotContain("--file-path");
  }

  @Test
  void aPluginOthersCanWriteOrAnotherUserOwnsIsRefusedNamingTheFileAndTheFix() throws Exception {
    Path plugins = Files.createDirectories(dir.resolve("plugins"));
    Files.setPosixFilePermissions(plugins, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path jar = plugins.resolve("txbox-file.jar");
    buildThePluginOfTheGuide(jar);
    Files.setPosixFilePermissions(jar, PosixFilePermissions.fromString("rw-rw-r--"));
    StringWriter err = new StringWriter();
    assertThat(Main.run(new TxboxCommand(), Map.of(Plugins.VARIABLE, plugins.toString()),
        new PrintWriter(new StringWriter()), new PrintWriter(err, true), "--version")).isEqualTo(2);
    assertThat(err.toString()).contains("plugin " + jar + " is writable by others (rw-rw-r--)", "chmod go-w " + jar);

    Files.setPosixFilePermissions(jar, PosixFilePermissions.fromString("rw-r--r--"));
    assertThat(Main.run(new TxboxCommand(), Map.of(Plugins.VARIABLE, plugins.toString()),
        new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter(), true), "--version")).isZero();

    UserPrincipal nobody = jar.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
    assumeTrue("root".equals(System.getProperty("user.name")), "giving a file away needs root");
    Files.setOwner(jar, nobody);
    StringWriter owned = new StringWriter();
    assertThat(Main.run(new TxboxCommand(), Map.of(Plugins.VARIABLE, plugins.toString()),
        new PrintWriter(new StringWriter()), new PrintWriter(owned, true), "--version")).isEqualTo(2);
    assertThat(owned.toString()).contains("plugin " + jar + " is owned by nobody, not by root");
  }

  /** The guide's example, compiled against txbox's API and packed with its service entry. */
  private void buildThePluginOfTheGuide(Path jar) throws Exception {
    Matcher example = EXAMPLE.matcher(Files.readString(GUIDE));
    assertThat(example.find()).as("the whole-module example in " + GUIDE).isTrue();
    Path source = Files.createDirectories(dir.resolve("src/com/example/txbox")).resolve("FileTransport.java");
    Files.writeString(source, example.group(1));
    Path classes = Files.createDirectories(dir.resolve("classes"));
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    assertThat(javac.run(null, null, null, "-cp", System.getProperty("java.class.path"), "-d", classes.toString(),
        source.toString())).as("javac exit code").isZero();
    try (OutputStream out = Files.newOutputStream(jar); JarOutputStream jarOut = new JarOutputStream(out);
        Stream<Path> files = Files.walk(classes)) {
      for (Path file : files.filter(Files::isRegularFile).toList()) {
        jarOut.putNextEntry(new JarEntry(classes.relativize(file).toString().replace('\\', '/')));
        jarOut.write(Files.readAllBytes(file));
        jarOut.closeEntry();
      }
      jarOut.putNextEntry(new JarEntry("META-INF/services/io.txbox.spi.Transport"));
      jarOut.write("com.example.txbox.FileTransport\n".getBytes(StandardCharsets.UTF_8));
      jarOut.closeEntry();
    }
  }
}
