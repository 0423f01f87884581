package io.txbox.testkit;

import io.txbox.testkit.internal.LocalPorts;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

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
      server.restart();
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
      process.destroyForcibly();
      try {
        process.waitFor(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
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
      long logStart = Files.exists(log) ? Files.size(log) : 0; // before the start: it may be ready at once
      process = new ProcessBuilder(binary(), "-a", "127.0.0.1", "-p", Integer.toString(port), "-js",
          "-sd", directory.resolve("store").toString())
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
          .start();
      awaitReady(log, logStart);
    } catch (IOException e) {
      throw new UncheckedIOException("could not start nats-server (set " + BINARY_VARIABLE + " to its path)", e);
    }
  }

  /** Ready once the server says so: JetStream answers only after it recovered its store. */
  private void awaitReady(Path log, long logStart) throws IOException {
    Instant deadline = Instant.now().plus(READY_TIMEOUT);
    while (Instant.now().isBefore(deadline)) {
      if (!process.isAlive()) {
        throw new IllegalStateException("nats-server exited while starting: " + Files.readString(log));
      }
      String written = Files.readString(log).substring((int) Math.min(logStart, Files.size(log)));
      if (written.contains("Server is ready") && LocalPorts.listening(port)) {
        return;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while starting nats-server", e);
      }
    }
    throw new IllegalStateException("nats-server did not start within " + READY_TIMEOUT + ": " + Files.readString(log));
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
    try (Stream<Path> files = Files.walk(directory)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a temporary directory left behind is harmless
    }
  }
}
