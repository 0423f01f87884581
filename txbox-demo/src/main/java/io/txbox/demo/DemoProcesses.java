package io.txbox.demo;

import io.txbox.testkit.ChildProcess;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * The demo's relays and inventory services, each a separate JVM, so that chaos can SIGKILL one
 * the way a crash or an OOM killer would. Each start of a process gets a new generation number,
 * which goes into its instance name, and its own log file.
 */
final class DemoProcesses implements AutoCloseable {
  private static final List<String> JVM_OPTIONS = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");

  /** One kind of process: its main class and its arguments for a generation. */
  record Kind(String mainClass, IntFunction<List<String>> args) {}

  private final Path logs;
  private final List<String> jvmOptions;
  private final Map<String, Kind> kinds = new LinkedHashMap<>();
  private final Map<String, Process> running = new LinkedHashMap<>();
  private final Map<String, Integer> generations = new LinkedHashMap<>();

  /** Processes logging under {@code logs}, with {@code brokerOptions} added to their JVMs' options. */
  DemoProcesses(Path logs, List<String> brokerOptions) {
    this.logs = logs;
    List<String> all = new ArrayList<>(JVM_OPTIONS);
    all.addAll(brokerOptions);
    this.jvmOptions = List.copyOf(all);
  }

  synchronized void start(String name, Kind kind) throws IOException {
    kinds.put(name, kind);
    restart(name);
  }

  /** Starts {@code name} again, as its next generation. */
  synchronized void restart(String name) throws IOException {
    int generation = generations.merge(name, 1, Integer::sum);
    Kind kind = kinds.get(name);
    Path log = logs.resolve(name + "." + generation + ".log");
    running.put(name, ChildProcess.start(jvmOptions, kind.mainClass(), kind.args().apply(generation), log));
  }

  /** SIGKILL: no shutdown hook runs, nothing is drained or committed. */
  synchronized void kill(String name) throws InterruptedException {
    Process p = running.get(name);
    p.destroyForcibly();
    p.waitFor(10, TimeUnit.SECONDS);
  }

  synchronized List<String> names() {
    return new ArrayList<>(kinds.keySet());
  }

  synchronized long alive(String prefix) {
    return running.entrySet().stream().filter(e -> e.getKey().startsWith(prefix) && e.getValue().isAlive()).count();
  }

  /** SIGTERM to all, so relays drain and subscribers commit; SIGKILL after {@code seconds}. */
  synchronized void stop(int seconds) throws InterruptedException {
    running.values().forEach(Process::destroy);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    for (Process p : running.values()) {
      p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    }
    close();
  }

  @Override
  public synchronized void close() {
    running.values().forEach(Process::destroyForcibly);
  }
}
