package io.txbox.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A NATS server with JetStream that a test starts for itself, on a free port with its own store
 * directory, so that it may kill it. The machine's NATS ({@value #MACHINE_URL}) serves every other
 * test; this one runs the same {@code nats-server} binary: the environment variable {@value
 * #BINARY_VARIABLE}, else {@code /usr/sbin/nats-server}, else {@code nats-server} on the path.
 *
 * <pre>{@code
 * try (NatsServer nats = NatsServer.start()) {
 *   publisher = NatsPublisher.builder().servers(nats.address()).build();
 *   nats.stop();
 *   nats.restart();
 * }
 * }</pre>
 */
public final class NatsServer implements StoppableBroker {
  /** The machine's NATS server, which tests use unless they must stop it. */
  public static final String MACHINE_URL = "nats://127.0.0.1:4222";
  /** Environment variable naming the {@code nats-server} binary. */
  public static final String BINARY_VARIABLE = "TXBOX_NATS_SERVER";
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(30);

  private final Path directory;
  private final int port;
  private Process process;

  private NatsServer(Path directory, int port) {
    this.directory = directory;
    this.port = port;
  }

  /** Starts a server with JetStream on a free port and waits until it serves. */
  public static NatsServer start() {
    try {
      NatsServer server = new NatsServer(Files.createTempDirectory("txbox-nats-"), LocalPorts.free());
      try {
        server.restart();
      } catch (RuntimeException e) {
        server.close();
        throw e;
      }
      return server;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start a NATS server", e);
    }
  }

  @Override
  public String address() {
    return "nats://127.0.0.1:" + port;
  }

  @Override
  public synchronized void stop() {
    if (process != null) {
      ServerProcess.kill(process);
      process = null;
    }
  }

  @Override
  public synchronized void restart() {
    if (process != null && process.isAlive()) {
      return;
    }
    try {
      Path log = directory.resolve("nats.log");
      long logStart = ServerProcess.logLength(log); // before the start: it may be ready at once
      process = new ProcessBuilder(binary(), "-a", "127.0.0.1", "-p", Integer.toString(port), "-js",
          "-sd", directory.resolve("store").toString())
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
          .start();
      // ready once it says so: JetStream answers only after it recovered its store
      ServerProcess.awaitLogLine(process, log, logStart, "Server is ready", port, READY_TIMEOUT, "nats-server");
    } catch (IOException e) {
      stop();
      throw new UncheckedIOException("could not start nats-server (set " + BINARY_VARIABLE + " to its path)", e);
    } catch (RuntimeException e) {
      stop(); // a server that never became ready is nobody else's to kill
      throw e;
    }
  }

  private static String binary() {
    String given = System.getenv(BINARY_VARIABLE);
    if (given != null && !given.isBlank()) {
      return given;
    }
    return List.of(Path.of("/usr/sbin/nats-server"), Path.of("/usr/bin/nats-server")).stream()
        .filter(Files::isExecutable).findFirst().map(Path::toString).orElse("nats-server");
  }

  @Override
  public void close() {
    stop();
    ServerProcess.deleteDirectory(directory);
  }
}
