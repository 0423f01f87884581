package io.txbox.server;

import io.txbox.testkit.ChildProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/** Relays (and other long-running commands) as separate JVMs ({@code txbox relay}), so that a test can SIGKILL one. */
final class RelayProcesses implements AutoCloseable {
  private final List<Process> processes = new ArrayList<>();
  private final List<Path> logs = new ArrayList<>();

  Process start(Path dir, List<String> args) throws IOException {
    return start(dir, List.of(), args);
  }

  /** A relay with {@code systemProperties} ({@code -Dname=value}) added to its JVM's options. */
  Process start(Path dir, List<String> systemProperties, List<String> args) throws IOException {
    return start(dir, systemProperties, Map.of(), args);
  }

  /** A relay with {@code environment} added to its own, as a container's variables are. */
  Process start(Path dir, List<String> systemProperties, Map<String, String> environment, List<String> args)
      throws IOException {
    return startCommand(dir, "relay", systemProperties, environment, args);
  }

  /** Another long-running txbox command, such as {@code console}, with its endpoint on a free port. */
  Process startCommand(Path dir, String command, List<String> systemProperties, Map<String, String> environment,
      List<String> args) throws IOException {
    Path log = dir.resolve(command + "-" + processes.size() + ".log");
    List<String> all = new ArrayList<>(List.of(command));
    all.addAll(args);
    if (!args.contains("--http-port") && !environment.containsKey("TXBOX_HTTP_PORT")) {
      all.addAll(List.of("--http-port", "0")); // several relays on one host: each on a free port
    }
    List<String> jvm = new ArrayList<>(List.of("-Xmx192m", "-XX:TieredStopAtLevel=1"));
    jvm.addAll(systemProperties);
    Process p = ChildProcess.start(jvm, System.getProperty("java.class.path"), Main.class.getName(), all,
        environment, log);
    processes.add(p);
    logs.add(log);
    return p;
  }

  String log(int index) throws IOException {
    return Files.readString(logs.get(index));
  }

  /** How many lines of the processes' logs so far hold each of {@code parts}, every log read once. */
  Map<String, Long> linesWith(List<String> parts) throws IOException {
    Map<String, Long> counts = new LinkedHashMap<>();
    parts.forEach(part -> counts.put(part, 0L));
    for (Path log : logs) {
      try (Stream<String> lines = Files.lines(log)) {
        lines.forEach(line -> parts.stream().filter(line::contains).forEach(part -> counts.merge(part, 1L, Long::sum)));
      }
    }
    return counts;
  }

  /** The last lines of every process's log, for a failure message that says what the processes saw. */
  String logTails(int lines) throws IOException {
    StringBuilder tails = new StringBuilder();
    for (int i = 0; i < logs.size(); i++) {
      List<String> all = Files.readAllLines(logs.get(i));
      tails.append("--- process ").append(i).append(" (").append(logs.get(i).getFileName()).append(")\n");
      all.subList(Math.max(0, all.size() - lines), all.size()).forEach(line -> tails.append(line).append('\n'));
    }
    return tails.toString();
  }

  @Override
  public void close() {
    processes.forEach(Process::destroyForcibly);
  }
}
