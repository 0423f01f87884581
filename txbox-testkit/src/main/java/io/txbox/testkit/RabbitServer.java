package io.txbox.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A RabbitMQ node that a test starts for itself, with its own node name, port and data directory,
 * so that it may kill it. The machine's RabbitMQ ({@value #MACHINE_URI}) serves every other test;
 * this one runs the same installation: the environment variable {@value #BINARY_VARIABLE}, else
 * {@code /usr/lib/rabbitmq/bin/rabbitmq-server}. It shares the machine's {@code epmd}, which it
 * never stops.
 *
 * <pre>{@code
 * try (RabbitServer rabbit = RabbitServer.start()) {
 *   publisher = RabbitPublisher.builder().uri(rabbit.address()).build();
 *   rabbit.stop();
 *   rabbit.restart();
 * }
 * }</pre>
 */
public final class RabbitServer implements StoppableBroker {
  /** The machine's RabbitMQ, which tests use unless they must stop it. */
  public static final String MACHINE_URI = "amqp://guest:guest@127.0.0.1:5672";
  /** Environment variable naming the {@code rabbitmq-server} script. */
  public static final String BINARY_VARIABLE = "TXBOX_RABBITMQ_SERVER";
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

  private final Path directory;
  private final int port;
  private final int distributionPort;
  private Process process;

  private RabbitServer(Path directory, int port, int distributionPort) {
    this.directory = directory;
    this.port = port;
    this.distributionPort = distributionPort;
  }

  /** Starts a node on a free port and waits until it serves. */
  public static RabbitServer start() {
    try {
      Path directory = Files.createTempDirectory("txbox-rabbitmq-");
      int[] ports = LocalPorts.free(2);
      int port = ports[0];
      Files.writeString(directory.resolve("enabled_plugins"), "[].\n");
      Files.writeString(directory.resolve("rabbitmq.conf"), "listeners.tcp.default = " + port + "\n"
          + "loopback_users = none\n");
      RabbitServer server = new RabbitServer(directory, port, ports[1]);
      try {
        server.restart();
      } catch (RuntimeException e) {
        server.close();
        throw e;
      }
      return server;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start a RabbitMQ node", e);
    }
  }

  @Override
  public String address() {
    return "amqp://guest:guest@127.0.0.1:" + port;
  }

  /** SIGKILL to the node's Erlang VM and everything it started; its data directory stays. */
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
      Path log = directory.resolve("rabbitmq.out");
      long logStart = ServerProcess.logLength(log);
      ProcessBuilder builder = new ProcessBuilder(binary())
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
      Map<String, String> env = builder.environment();
      env.put("RABBITMQ_NODENAME", "txbox-" + port + "@localhost");
      env.put("RABBITMQ_NODE_PORT", Integer.toString(port));
      env.put("RABBITMQ_DIST_PORT", Integer.toString(distributionPort));
      env.put("RABBITMQ_MNESIA_BASE", directory.resolve("mnesia").toString());
      env.put("RABBITMQ_LOG_BASE", directory.resolve("log").toString());
      env.put("RABBITMQ_ENABLED_PLUGINS_FILE", directory.resolve("enabled_plugins").toString());
      env.put("RABBITMQ_CONFIG_FILE", directory.resolve("rabbitmq").toString());
      env.put("RABBITMQ_PID_FILE", directory.resolve("pid").toString());
      env.put("HOME", directory.toString()); // its own Erlang cookie
      process = builder.start();
      ServerProcess.awaitLogLine(process, log, logStart, "Starting broker... completed", port, READY_TIMEOUT,
          "rabbitmq-server");
    } catch (IOException e) {
      stop();
      throw new UncheckedIOException("could not start rabbitmq-server (set " + BINARY_VARIABLE + " to its path)", e);
    } catch (RuntimeException e) {
      stop(); // a node that never became ready is nobody else's to kill
      throw e;
    }
  }

  private static String binary() {
    String given = System.getenv(BINARY_VARIABLE);
    return given != null && !given.isBlank() ? given : "/usr/lib/rabbitmq/bin/rabbitmq-server";
  }

  /** The last 60 lines of the node's log files: crash reports of queues that did not recover show here. */
  @Override
  public String recentLog() {
    try (Stream<Path> files = Files.walk(directory.resolve("log"))) {
      StringBuilder tail = new StringBuilder();
      for (Path log : files.filter(Files::isRegularFile).toList()) {
        List<String> lines = Files.readAllLines(log);
        tail.append("== ").append(log.getFileName()).append('\n')
            .append(String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()))).append('\n');
      }
      return tail.toString();
    } catch (IOException | UncheckedIOException e) {
      return "cannot read the node's log: " + e;
    }
  }

  @Override
  public void close() {
    stop();
    ServerProcess.deleteDirectory(directory);
  }
}
