package io.txbox.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A PgBouncer of the test's own in front of a PostgreSQL server, in one pooling mode, on a free
 * port: Debian's {@code pgbouncer} binary ({@value #BINARY_VARIABLE}, else {@code
 * /usr/sbin/pgbouncer}), run as the {@code postgres} user when the test runs as root, since
 * PgBouncer refuses root. Clients connect with the server's user names; authentication is left to
 * the server behind it ({@code auth_type = trust} here, on loopback only).
 *
 * <pre>{@code
 * try (PgBouncer pooler = PgBouncer.start(PgBouncer.Mode.TRANSACTION, "127.0.0.1", 5432, 8)) {
 *   String url = pooler.jdbcUrl("test") + "&prepareThreshold=0";
 * }
 * }</pre>
 */
public final class PgBouncer implements AutoCloseable {
  /** Environment variable naming the {@code pgbouncer} binary. */
  public static final String BINARY_VARIABLE = "TXBOX_PGBOUNCER";
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(30);

  /** How PgBouncer lends server connections to its clients. */
  public enum Mode {
    /** A server connection per client connection, for as long as it is open. */
    SESSION,
    /** A server connection per transaction: session state (LISTEN, SET, prepared statements) does not last. */
    TRANSACTION
  }

  private final Path directory;
  private final int port;
  private final Process process;

  private PgBouncer(Path directory, int port, Process process) {
    this.directory = directory;
    this.port = port;
    this.process = process;
  }

  /**
   * Starts PgBouncer in {@code mode} in front of the server at {@code host:port}, with at most
   * {@code poolSize} server connections per database and user, and waits until it serves.
   */
  public static PgBouncer start(Mode mode, String serverHost, int serverPort, int poolSize) {
    try {
      Path directory = Files.createTempDirectory("txbox-pgbouncer-");
      int port = LocalPorts.free();
      Path ini = directory.resolve("pgbouncer.ini");
      Files.writeString(directory.resolve("userlist.txt"), "\"postgres\" \"\"\n\"root\" \"\"\n");
      Files.writeString(ini, String.join("\n",
          "[databases]",
          "* = host=" + serverHost + " port=" + serverPort,
          "[pgbouncer]",
          "listen_addr = 127.0.0.1",
          "listen_port = " + port,
          "unix_socket_dir =",
          "auth_type = trust",
          "auth_file = " + directory.resolve("userlist.txt"),
          "pool_mode = " + mode.name().toLowerCase(Locale.ROOT),
          "default_pool_size = " + poolSize,
          "max_client_conn = 500",
          // pgjdbc sends extra_float_digits at start; PgBouncer refuses what it does not know
          "ignore_startup_parameters = extra_float_digits",
          "logfile = " + directory.resolve("pgbouncer.log"),
          "pidfile = " + directory.resolve("pgbouncer.pid"),
          ""));
      Files.createFile(directory.resolve("pgbouncer.log"));
      ServiceUser.handOver(directory);
      List<String> command = new ArrayList<>(ServiceUser.prefix());
      command.add(binary());
      command.add(ini.toString());
      Process process;
      try {
        process = new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(directory.resolve("console.log").toFile())).start();
      } catch (IOException e) {
        throw new IOException("cannot run " + binary() + " (install Debian's pgbouncer package, or set "
            + BINARY_VARIABLE + ")", e);
      }
      PgBouncer pooler = new PgBouncer(directory, port, process);
      try {
        ServerProcess.awaitLogLine(process, directory.resolve("pgbouncer.log"), 0, "process up", port, READY_TIMEOUT,
            "pgbouncer");
      } catch (IOException | RuntimeException e) {
        String console = pooler.consoleLog();
        pooler.close(); // a pooler that never became ready is nobody else's to stop
        throw new IllegalStateException(e.getMessage() + "\n" + console, e);
      }
      return pooler;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start pgbouncer: " + e.getMessage(), e);
    }
  }

  /** A JDBC URL of {@code database} through this pooler, as {@code postgres}. */
  public String jdbcUrl(String database) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + database + "?user=postgres";
  }

  /** The port it listens on. */
  public int port() {
    return port;
  }

  /** What PgBouncer logged: connections, pool events, errors. */
  public String log() {
    try {
      Path log = directory.resolve("pgbouncer.log");
      return Files.exists(log) ? Files.readString(log) : "";
    } catch (IOException e) {
      return "(cannot read the log: " + e.getMessage() + ")";
    }
  }

  private String consoleLog() {
    try {
      return Files.readString(directory.resolve("console.log"));
    } catch (IOException e) {
      return "";
    }
  }

  private static String binary() {
    String given = System.getenv(BINARY_VARIABLE);
    if (given != null && !given.isBlank()) {
      return given;
    }
    return Files.isExecutable(Path.of("/usr/sbin/pgbouncer")) ? "/usr/sbin/pgbouncer" : "pgbouncer";
  }

  /** Stops it (its clients' connections break) and deletes its files. */
  @Override
  public void close() {
    ServerProcess.kill(process);
    ServerProcess.deleteDirectory(directory);
  }
}
