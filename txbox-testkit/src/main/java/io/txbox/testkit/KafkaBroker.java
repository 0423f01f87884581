package io.txbox.testkit;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * A real single-node Kafka broker (KRaft) in a child JVM, started from the Kafka jars on the
 * class path (Maven Central artifacts, no Docker). Automatic topic creation is off, as in most
 * production clusters; create topics with {@link #createTopic}.
 *
 * <pre>{@code
 * try (KafkaBroker kafka = KafkaBroker.start()) {
 *   kafka.createTopic("orders", 4);
 *   producerProps.put("bootstrap.servers", kafka.bootstrapServers());
 *   kafka.stop();    // an outage
 *   kafka.restart(); // same port, same data
 * }
 * }</pre>
 *
 * <p>The broker exits on its own when the JVM that started it goes away, even when killed.
 *
 * <p>{@link #shared()} serves a whole run from one broker when {@value #ADDRESS_VARIABLE} names
 * one ({@code 127.0.0.1:9092}), as {@code TXBOX_TEST_JDBC_URL} names the database: CI starts it
 * once with {@link #main} rather than one per module and JDK.
 */
public final class KafkaBroker implements StoppableBroker {
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(90);
  /**
   * The broker's own libraries, as resolved when testkit was built (kafka-broker.classpath), so
   * that a test built on another kafka-clients, such as the one Spring Boot manages, still runs
   * the broker txbox is tested with. This JVM's class path when that file is missing or stale.
   */
  private static final String BROKER_CLASS_PATH = brokerClassPath();
  /** The environment variable that makes {@link #shared()} use a running broker: {@code host:port}. */
  public static final String ADDRESS_VARIABLE = "TXBOX_TEST_KAFKA";
  private static KafkaBroker shared;

  private final Path directory; // null for a broker this JVM did not start
  private final String address;
  private final String heap;
  private Process process;

  private KafkaBroker(Path directory, String address, String heap) {
    this.directory = directory;
    this.address = address;
    this.heap = heap;
  }

  /** Starts a broker with a 768 MB heap on a free port. */
  public static KafkaBroker start() {
    return start("768m");
  }

  /** Starts a broker with the given heap ({@code -Xmx} value) on a free port. */
  public static KafkaBroker start(String heap) {
    return start(heap, Map.of());
  }

  /**
   * Starts a broker with the given heap on a free port, with {@code settings} in its
   * {@code server.properties} in place of the defaults (which do not create topics on demand).
   */
  public static KafkaBroker start(String heap, Map<String, String> settings) {
    requireBroker(BROKER_CLASS_PATH.equals(System.getProperty("java.class.path")), KafkaBroker.class.getClassLoader());
    try {
      int[] ports = LocalPorts.free(2);
      KafkaBroker broker = formatted(Uuid.randomUuid().toString(), ports[0], ports[1], heap, settings);
      try {
        broker.restart();
      } catch (RuntimeException e) {
        broker.close();
        throw e;
      }
      return broker;
    } catch (IOException e) {
      throw new UncheckedIOException("could not start a Kafka broker", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting a Kafka broker", e);
    }
  }

  /**
   * A node's directory with its {@code server.properties} ({@code settings} over the defaults) and
   * its storage formatted for cluster {@code clusterId}; not started.
   */
  static KafkaBroker formatted(String clusterId, int port, int controllerPort, String heap,
      Map<String, String> settings) throws IOException, InterruptedException {
    Path directory = Files.createTempDirectory("txbox-kafka-");
    writeProperties(directory, port, controllerPort, settings);
    ChildProcess.run(BROKER_CLASS_PATH, "kafka.tools.StorageTool",
        List.of("format", "-t", clusterId, "-c", directory.resolve("server.properties").toString()),
        directory.resolve("format.log"));
    return new KafkaBroker(directory, "127.0.0.1:" + port, heap);
  }

  /**
   * One broker shared by every test of this JVM: the one {@value #ADDRESS_VARIABLE} names, else
   * one started on first use and stopped when the JVM exits. Tests that stop a broker must start
   * their own instead, and a shared broker refuses to stop. Topics and groups on it outlive the
   * test: give them unique names.
   */
  public static synchronized KafkaBroker shared() {
    if (shared == null) {
      String running = System.getenv(ADDRESS_VARIABLE);
      if (running != null && !running.isBlank()) {
        shared = running(running.trim());
      } else {
        shared = start();
        Runtime.getRuntime().addShutdownHook(new Thread(shared::close, "txbox-kafka-shutdown"));
      }
    }
    return shared;
  }

  /** A broker some other process started and runs, at {@code host:port}: it cannot be stopped from here. */
  static KafkaBroker running(String address) {
    return new KafkaBroker(null, address, null);
  }

  /**
   * Starts a broker and keeps it until this JVM is stopped; prints {@code
   * TXBOX_TEST_KAFKA=host:port} once it is ready. CI runs it before the build, so that {@link
   * #shared()} in every module and on every JDK finds the same broker:
   *
   * <pre>{@code
   * java -cp "txbox-testkit/target/classes:$(cat txbox-testkit/target/classes/io/txbox/testkit/kafka-broker.classpath)" \
   *     io.txbox.testkit.KafkaBroker 1g
   * }</pre>
   *
   * @param args the heap ({@code -Xmx} value), 768m when absent
   */
  public static void main(String[] args) throws InterruptedException {
    KafkaBroker broker = start(args.length > 0 ? args[0] : "768m");
    Runtime.getRuntime().addShutdownHook(new Thread(broker::close, "txbox-kafka-shutdown"));
    System.out.println(ADDRESS_VARIABLE + "=" + broker.bootstrapServers());
    System.out.flush();
    new CountDownLatch(1).await(); // until the JVM is told to stop
  }

  /** {@code host:port} for {@code bootstrap.servers}. */
  public String bootstrapServers() {
    return address;
  }

  /** The same as {@link #bootstrapServers()}. */
  @Override
  public String address() {
    return bootstrapServers();
  }

  /** Whether the broker process is running; always true for one this JVM did not start. */
  public synchronized boolean isRunning() {
    return directory == null || (process != null && process.isAlive());
  }

  /** Creates a topic with replication factor 1, unless it exists. */
  public void createTopic(String name, int partitions) {
    createTopic(name, partitions, Map.of());
  }

  /**
   * Creates a topic with replication factor 1 and topic configs, unless it exists, and returns
   * once the broker names a leader for every partition and that leader answers for it.
   */
  public void createTopic(String name, int partitions, Map<String, String> configs) {
    try (Admin admin = admin()) {
      createTopic(admin, new NewTopic(name, partitions, (short) 1).configs(configs));
    }
  }

  /** Creates {@code topic} unless it exists, and waits until every partition's leader answers. */
  static void createTopic(Admin admin, NewTopic topic) {
    String name = topic.name();
    try {
      try {
        admin.createTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) {
          throw e;
        }
      }
      // The controller answers once it has recorded the topic; the broker updates its metadata
      // a moment later, and only after that creates the partitions' logs: a send in between is
      // refused and retried (once, in CI on a loaded machine, every send to one partition of a
      // new topic expired after the producer's 30 s). Asking each partition's leader for its end
      // offset waits for the logs themselves. (A loop, not Awaitility: the demo and the benchmarks run this without
      // test libraries.)
      Instant deadline = Instant.now().plusSeconds(30);
      while (!everyPartitionAnswers(admin, name)) {
        if (Instant.now().isAfter(deadline)) {
          throw new IllegalStateException("not every partition of " + name + " has a leader that answers after 30 s");
        }
        pause();
      }
    } catch (Exception e) {
      throw new IllegalStateException("could not create topic " + name, e);
    }
  }

  private static boolean everyPartitionAnswers(Admin admin, String topic) throws Exception {
    try {
      TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames()
          .get(10, TimeUnit.SECONDS).get(topic);
      if (!description.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
        return false;
      }
      Map<TopicPartition, OffsetSpec> ends = new HashMap<>();
      description.partitions().forEach(p -> ends.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
      admin.listOffsets(ends).all().get(10, TimeUnit.SECONDS);
      return true;
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RetriableException) { // unknown topic or partition, not the leader yet
        return false;
      }
      throw e;
    }
  }

  /**
   * The testkit leaves the broker (kafka_2.13, with Scala) out of other brokers' tests: when the
   * list of its libraries made at the testkit's build is stale ({@code fromTestClassPath}), it
   * must come from the test's own dependencies.
   */
  static void requireBroker(boolean fromTestClassPath, ClassLoader loader) {
    if (!fromTestClassPath) {
      return;
    }
    try {
      Class.forName("kafka.Kafka", false, loader);
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("KafkaBroker runs the broker from org.apache.kafka:kafka_2.13, which is not"
          + " on the test class path: add it as a test dependency, in the version of your kafka-clients", e);
    }
  }

  private static String brokerClassPath() {
    try (InputStream in = KafkaBroker.class.getResourceAsStream("kafka-broker.classpath")) {
      if (in != null) {
        String classPath = new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
        if (Arrays.stream(classPath.split(File.pathSeparator)).allMatch(entry -> Files.exists(Path.of(entry)))) {
          return classPath;
        }
      }
      return System.getProperty("java.class.path");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the Kafka broker's class path", e);
    }
  }

  /** An admin client for this broker; the caller closes it. */
  public Admin admin() {
    return admin(bootstrapServers());
  }

  /** An admin client of the brokers at {@code bootstrapServers}, with a test's short timeouts. */
  static Admin admin(String bootstrapServers) {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
    return Admin.create(p);
  }

  @Override
  public synchronized void stop() {
    requireOwn("stop");
    if (process != null) {
      ServerProcess.kill(process);
      process = null;
    }
  }

  @Override
  public synchronized void restart() {
    requireOwn("restart");
    if (isRunning()) {
      return;
    }
    launch();
    awaitReady();
  }

  /** Starts the broker's process without waiting for it: a cluster's nodes wait for each other. */
  synchronized void launch() {
    try {
      process = ChildProcess.start(
          List.of("-Xms256m", "-Xmx" + heap, "-XX:+UseG1GC", "-Djava.awt.headless=true"), BROKER_CLASS_PATH,
          "kafka.Kafka", List.of(directory.resolve("server.properties").toString()),
          directory.resolve("kafka.log"));
    } catch (IOException e) {
      stop();
      throw new UncheckedIOException("could not start the Kafka broker", e);
    }
  }

  /** Waits until the launched broker answers; kills it if it never does. */
  void awaitReady() {
    try {
      waitUntilItAnswers();
    } catch (IOException e) {
      stop();
      throw new UncheckedIOException("could not start the Kafka broker", e);
    } catch (RuntimeException e) {
      stop(); // a broker that never became ready is nobody else's to kill
      throw e;
    }
  }

  private void waitUntilItAnswers() throws IOException {
    Instant deadline = Instant.now().plus(READY_TIMEOUT);
    while (Instant.now().isBefore(deadline)) {
      if (!process.isAlive()) {
        throw new IllegalStateException("the Kafka broker exited while starting: " + logTail());
      }
      if (!LocalPorts.listening(port())) {
        pause();
        continue;
      }
      try (Admin admin = admin()) {
        admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
        return;
      } catch (Exception e) {
        pause();
      }
    }
    throw new IllegalStateException("the Kafka broker did not start within " + READY_TIMEOUT + ": " + logTail());
  }

  /** The end of this broker's log; empty for a broker this JVM did not start. */
  @Override
  public String recentLog() {
    if (directory == null) {
      return "";
    }
    try {
      return logTail();
    } catch (IOException e) {
      return "(its log cannot be read: " + e + ")";
    }
  }

  private String logTail() throws IOException {
    String log = Files.readString(directory.resolve("kafka.log"));
    return log.substring(Math.max(0, log.length() - 3000));
  }

  private int port() {
    return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
  }

  /** Refuses to stop or restart the run's broker: other tests, in other JVMs, use it. */
  private void requireOwn(String what) {
    if (directory == null) {
      throw new IllegalStateException("cannot " + what + " the run's shared Kafka broker at " + address + " ("
          + ADDRESS_VARIABLE + "): other tests use it; a test that stops a broker starts its own with"
          + " KafkaBroker.start()");
    }
  }

  /** Stops a broker this JVM started and deletes its data; leaves the run's shared broker alone. */
  @Override
  public void close() {
    if (directory != null) {
      stop();
      ServerProcess.deleteDirectory(directory);
    }
  }

  private static void writeProperties(Path directory, int port, int controllerPort, Map<String, String> settings)
      throws IOException {
    Map<String, String> properties = new LinkedHashMap<>();
    for (String line : List.of(
        "process.roles=broker,controller",
        "node.id=1",
        "controller.quorum.voters=1@127.0.0.1:" + controllerPort,
        "listeners=PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort,
        "advertised.listeners=PLAINTEXT://127.0.0.1:" + port,
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name=PLAINTEXT",
        "offsets.topic.replication.factor=1",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        "auto.create.topics.enable=false",
        "num.partitions=4",
        "log.dirs=" + directory.resolve("data"))) {
      int eq = line.indexOf('=');
      properties.put(line.substring(0, eq), line.substring(eq + 1));
    }
    properties.putAll(settings);
    StringBuilder text = new StringBuilder();
    properties.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
    Files.writeString(directory.resolve("server.properties"), text);
  }

  private static void pause() {
    try {
      Thread.sleep(200);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
