package io.txbox.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * An SQS-compatible server, ElasticMQ (Maven Central's {@code org.elasticmq:elasticmq-server_2.13},
 * which the test's class path must hold), in a child JVM on a free port, with its queues kept on
 * disk so that a test may kill it and start it again. Messages are not kept across a restart:
 * with ElasticMQ's H2 message store, a restarted server handed out FIFO messages out of order
 * (one receive returned a group's messages 1, 8, 2, 9, 3, sent after the restart), which SQS
 * never does.
 *
 * <pre>{@code
 * try (ElasticMqServer sqs = ElasticMqServer.start()) {
 *   publisher = SqsPublisher.builder().endpoint(sqs.address()).region("us-east-1").credentials("x", "x").build();
 *   sqs.stop();      // SIGKILL
 *   sqs.restart();   // same port, same queues (their messages are gone)
 * }
 * }</pre>
 *
 * <p>ElasticMQ is not SQS: it runs with SQS's limits ({@code sqs-limits = strict}), but it is one
 * node, and its FIFO queues, visibility and deduplication are its own implementation of SQS's
 * documented behaviour.
 */
public final class ElasticMqServer implements StoppableBroker {
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);
  private static final String MAIN_CLASS = "org.elasticmq.server.Main";
  private static ElasticMqServer shared;

  private final Path directory;
  private final int port;
  private Process process;

  private ElasticMqServer(Path directory, int port) {
    this.directory = directory;
    this.port = port;
  }

  /**
   * Starts a server on a free port and waits until it serves.
   *
   * @throws IllegalStateException naming the dependency to add when ElasticMQ is not on the class path
   */
  public static ElasticMqServer start() {
    requireOnClassPath();
    try {
      ElasticMqServer server = new ElasticMqServer(Files.createTempDirectory("txbox-elasticmq-"), LocalPorts.free());
      try {
        server.writeConfig();
        server.restart();
      } catch (RuntimeException e) {
        server.close();
        throw e;
      }
      return server;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start ElasticMQ", e);
    }
  }

  /**
   * The testkit does not bring ElasticMQ (and its Scala runtime) to every user's tests: a test that
   * runs it adds it, and one that forgot is told which artifact, not shown a child JVM's
   * {@code ClassNotFoundException}.
   */
  static void requireOnClassPath() {
    try {
      Class.forName(MAIN_CLASS, false, ElasticMqServer.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("ElasticMqServer runs ElasticMQ from the test class path, and " + MAIN_CLASS
          + " is not on it: add the test dependency org.elasticmq:elasticmq-server_2.13 (txbox is tested with 1.6.11)");
    }
  }

  /** One server for every test of this JVM that does not stop it; it exits with the JVM. */
  public static synchronized ElasticMqServer shared() {
    if (shared == null) {
      shared = start();
    }
    return shared;
  }

  private void writeConfig() throws IOException {
    String dir = directory.toAbsolutePath().toString().replace("\\", "/");
    Files.writeString(directory.resolve("elasticmq.conf"), """
        include classpath("reference.conf")
        node-address { protocol = "http", host = "127.0.0.1", port = %d, context-path = "" }
        rest-sqs { enabled = true, bind-port = %d, bind-hostname = "127.0.0.1", sqs-limits = strict }
        rest-stats { enabled = false }
        queues-storage { enabled = true, path = "%s/queues.conf" }
        """.formatted(port, port, dir));
  }

  /** The endpoint URL clients take. */
  @Override
  public String address() {
    return "http://127.0.0.1:" + port;
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
      Path log = directory.resolve("elasticmq.log");
      long logStart = ServerProcess.logLength(log);
      process = ChildProcess.start(List.of("-Xmx256m", "-Dconfig.file=" + directory.resolve("elasticmq.conf")),
          MAIN_CLASS, List.of(), log);
      ServerProcess.awaitLogLine(process, log, logStart, "started in", port, READY_TIMEOUT, "ElasticMQ");
    } catch (IOException e) {
      stop();
      throw new UncheckedIOException("could not start ElasticMQ (org.elasticmq:elasticmq-server_2.13 must be on"
          + " the class path)", e);
    } catch (RuntimeException e) {
      stop(); // a server that never became ready is nobody else's to kill
      throw e;
    }
  }

  @Override
  public void close() {
    stop();
    ServerProcess.deleteDirectory(directory);
  }
}
