package io.txbox.server;

import io.txbox.testkit.ChildProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Relays running as separate JVMs ({@code txbox relay}), so that a test can SIGKILL one. */
final class RelayProcesses implements AutoCloseable {
  private final List<Process> processes = new ArrayList<>();
  private final List<Path> logs = new ArrayList<>();

  Process start(Path dir, List<String> args) throws IOException {
    return start(dir, List.of(), args);
  }

  /** A relay with {@code systemProperties} ({@code -Dname=value}) added to its JVM's options. */
  Process start(Path dir, List<String> systemProperties, List<String> args) throws IOException {
    Path log = dir.resolve("relay-" + processes.size() + ".log");
    List<String> all = new ArrayList<>(List.of("relay"));
    all.addAll(args);
    List<String> jvm = new ArrayList<>(List.of("-Xmx192m", "-XX:TieredStopAtLevel=1"));
    jvm.addAll(systemProperties);
    Process p = ChildProcess.start(jvm, Main.class.getName(), all, log);
    processes.add(p);
    logs.add(log);
    return p;
  }

  String log(int index) throws IOException {
    return Files.readString(logs.get(index));
  }

  @Override
  public void close() {
    processes.forEach(Process::destroyForcibly);
  }
}
