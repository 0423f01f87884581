package io.txbox.bench;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Debezium's engine ({@code io.txbox.bench.debezium.DebeziumRelay}) in a JVM of its own, on the
 * class path of module txbox-bench-debezium, reading a slot made for it on Debezium's outbox table
 * and publishing to a topic of its own; {@link #close()} asks it to stop, {@link #kill()} SIGKILLs it.
 */
final class DebeziumProcess implements AutoCloseable {
  final Process process;
  private final Path log;

  DebeziumProcess(String classPath, String jdbcUrl, String bootstrapServers, String slot, String topic, Path offsets,
      Map<String, String> extra) throws IOException {
    this.log = Files.createTempFile("txbox-bench-debezium", ".log");
    URI server = URI.create(jdbcUrl.substring("jdbc:".length()));
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    command.addAll(DebeziumBench.RELAY_JVM_OPTIONS);
    command.addAll(List.of("-cp", classPath, "io.txbox.bench.debezium.DebeziumRelay",
        "host=" + server.getHost(), "port=" + server.getPort(), "database=" + server.getPath().substring(1),
        "user=postgres", "schema=" + BenchDatabase.SCHEMA, "table=" + DebeziumBench.TABLE, "slot=" + slot,
        "publication=" + slot, "topic=" + topic, "bootstrap=" + bootstrapServers, "offsets=" + offsets,
        "debezium.poll.interval.ms=5"));
    extra.forEach((k, v) -> command.add(k + "=" + v));
    // Not through ChildProcess, which puts this jar (and its older pgjdbc and kafka-clients) first;
    // the engine stops by itself when its standard input closes with this JVM.
    process = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
  }

  /** Where the engine's output goes. */
  Path log() {
    return log;
  }

  /** Waits until the engine prints a line matching {@code line}. */
  Matcher await(Pattern line) throws Exception {
    return Await.line("Debezium", process, log, line);
  }

  /** SIGKILL: no offset flush, no slot confirmation. */
  void kill() throws InterruptedException {
    process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
  }

  @Override
  public void close() throws Exception {
    if (process.isAlive()) {
      try (OutputStream in = process.getOutputStream()) {
        in.write("stop\n".getBytes(StandardCharsets.UTF_8));
      } catch (IOException e) {
        // gone already
      }
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        kill();
      }
    }
  }
}
