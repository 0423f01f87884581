package io.txbox.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * What the servers that tests and benchmarks start have in common: waiting for them, killing
 * them, cleaning up after them.
 *
 * <pre>{@code
 * long logStart = ServerProcess.logLength(log);
 * Process server = ...; // started with its output appended to log
 * ServerProcess.awaitLogLine(server, log, logStart, "Server is ready", port, Duration.ofSeconds(60), "nats-server");
 * ...
 * ServerProcess.kill(server);
 * }</pre>
 */
public final class ServerProcess {
  private ServerProcess() {}

  /** The log's length now, to be given to {@link #awaitLogLine} for a start that follows. */
  public static long logLength(Path log) throws IOException {
    return Files.exists(log) ? Files.size(log) : 0;
  }

  /**
   * Waits until the server wrote {@code readyLine} to {@code log} after {@code logStart} and
   * accepts connections on {@code port}; fails with the log when it exits or takes too long.
   */
  public static void awaitLogLine(Process process, Path log, long logStart, String readyLine, int port,
      Duration timeout, String name) throws IOException {
    Instant deadline = Instant.now().plus(timeout);
    while (Instant.now().isBefore(deadline)) {
      if (!process.isAlive()) {
        throw new IllegalStateException(name + " exited while starting: " + Files.readString(log));
      }
      String written = Files.readString(log).substring((int) Math.min(logStart, Files.size(log)));
      if (written.contains(readyLine) && LocalPorts.listening(port)) {
        return;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while starting " + name, e);
      }
    }
    throw new IllegalStateException(name + " did not start within " + timeout + ": " + Files.readString(log));
  }

  /** SIGKILL to the process and everything it started, as in a crash. */
  public static void kill(Process process) {
    process.descendants().forEach(ProcessHandle::destroyForcibly);
    process.destroyForcibly();
    try {
      process.waitFor(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Deletes {@code directory} with everything in it; what cannot be deleted stays. */
  public static void deleteDirectory(Path directory) {
    try (Stream<Path> files = Files.walk(directory)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a temporary directory left behind is harmless
    }
  }
}
