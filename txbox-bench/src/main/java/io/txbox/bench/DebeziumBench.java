package io.txbox.bench;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.cdc.LogicalReplication;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.testkit.ChildProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Debezium beside txbox, in alternating rounds on one PostgreSQL with {@code wal_level=logical}
 * and one Kafka: Debezium's embedded engine (PostgreSQL connector, {@code pgoutput}, the outbox
 * Event Router, {@code poll.interval.ms=5}) on its own outbox table, in a JVM of its own with its
 * own class path (module txbox-bench-debezium), against txbox's logical relay from outbox rows:
 * how fast each drains a backlog, commit → broker-ack latency and the relay process's CPU per
 * event at 1,000 events/s (both relays in JVMs of their own, recording their acknowledgements),
 * and how many events each sends twice when SIGKILLed halfway through a backlog and restarted.
 */
@Command(name = "debezium", description = "Debezium's embedded engine with the outbox Event Router beside txbox's"
    + " logical relay: drain, commit-to-ack latency and CPU per event, events sent twice after a SIGKILL.")
final class DebeziumBench implements Callable<Integer> {
  private static final Pattern DRAINED = Pattern.compile("drained (\\d+) in (\\d+) ms");
  private static final String PRODUCER_ALONE = "a cold JVM that only sends the records (kafka-clients)";
  private static final Pattern FIRST = Pattern.compile("first acknowledged in (\\d+) ms");
  static final String TABLE = "debezium_outbox";
  /** The options of every JVM a drain starts (Debezium's, txbox's, the cold producer's): alike, so they compare. */
  static final List<String> RELAY_JVM_OPTIONS = java.util.stream.Stream.concat(
      java.util.stream.Stream.of("-Xmx1g"), CompileTime.JVM_OPTIONS.stream()).toList();

  @Option(names = "--jdbc-url", description = "A server with wal_level=logical; default: an embedded one")
  String jdbcUrl;

  @Option(names = "--rounds", defaultValue = "3")
  int rounds;

  @Option(names = "--events", defaultValue = "200000", description = "Backlog each relay drains")
  int events;

  @Option(names = "--kill-events", defaultValue = "100000", description = "Backlog of the SIGKILL run")
  int killEvents;

  @Option(names = "--latency-seconds", defaultValue = "20")
  int latencySeconds;

  @Option(names = "--debezium", defaultValue = "txbox-bench-debezium/target",
      description = "Where the txbox-bench-debezium module was built (its classes and debezium.classpath)")
  Path debezium;

  @Option(names = "--parts", split = ",", defaultValue = "drain,latency,resends")
  List<String> parts;

  private String url;
  private KafkaBench kafka;
  private BenchDatabase db;
  private final LogicalBench txbox = new LogicalBench();

  @Override
  public Integer call() throws Exception {
    String classPath = debeziumClassPath();
    LogicalBench.Server server = LogicalBench.Server.start(jdbcUrl);
    url = server.url();
    txbox.batchSize = io.txbox.cdc.LogicalRelay.DEFAULT_BATCH_SIZE;
    txbox.events = events;
    txbox.latencySeconds = latencySeconds;
    try (server; BenchDatabase database = new BenchDatabase(url, 8); KafkaBench broker = new KafkaBench(8)) {
      db = database;
      kafka = broker;
      db.execute(createTable());
      PostgresOutboxStore rows = WriteOverhead.migrated(db.store().tablePrefix("dbz_cmp_").notifyOnAppend(false).build());
      Results results = new Results("debezium", "java -jar txbox-bench/target/txbox-bench.jar debezium");
      results.setting("server", server.description());
      results.setting("debezium", "3.6.1.Final embedded engine, pgoutput, outbox EventRouter, poll.interval.ms=5,"
          + " other settings default; kafka-clients 4.3.0, acks=all, idempotent; each batch awaited");
      results.setting("txbox", "logical relay from outbox rows, default settings");
      results.setting("rounds", rounds);
      Map<String, List<Double>> figures = new java.util.LinkedHashMap<>();
      for (int round = 1; round <= rounds; round++) {
        if (parts.contains("drain")) {
          add(figures, "Debezium", debeziumDrain(classPath, round));
          add(figures, "txbox", txboxDrain(rows, round));
          add(figures, PRODUCER_ALONE, producerDrain(round));
        }
        if (parts.contains("latency")) {
          add(figures, "Debezium", debeziumLatency(classPath, round));
          add(figures, "txbox", txboxLatency(rows, round));
        }
        if (parts.contains("resends")) {
          add(figures, "sent twice after SIGKILL, Debezium", debeziumResends(classPath, round));
          add(figures, "sent twice after SIGKILL, txbox", txboxResends(rows, round));
        }
        System.out.println("round " + round + ": " + figures);
      }
      publish(results, figures);
      results.publish(Path.of("txbox-bench", "results"));
    }
    return 0;
  }

  private static void add(Map<String, List<Double>> figures, String name, double value) {
    figures.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
  }

  private static void add(Map<String, List<Double>> figures, String relay, ColdDrain drain) {
    add(figures, "drain, " + relay, drain.rate());
    add(figures, "drain after the first acknowledgement, " + relay, drain.rateAfterFirst());
    add(figures, "first acknowledgement after the start of main, " + relay, drain.firstMillis());
    add(figures, "CPU per event over the drain, relay process, " + relay, drain.relayCpuMicros());
    add(figures, "CPU per event over the drain, whole host, " + relay, drain.hostCpuMicros());
    add(figures, "CPU per event over the drain, rest of the host (walsender, Kafka broker, ...), " + relay,
        drain.hostCpuMicros() - drain.relayCpuMicros());
    add(figures, "CPU per event over the drain, the relay's JIT compiling (CITime, until exit), " + relay,
        drain.compileMicros());
  }

  private static void add(Map<String, List<Double>> figures, String relay, Timing timing) {
    add(figures, "latency p50, " + relay, timing.p50());
    add(figures, "latency p99, " + relay, timing.p99());
    add(figures, "relay process CPU per event at 1,000 events/s, " + relay, timing.cpuMicrosPerEvent());
  }

  private void publish(Results results, Map<String, List<Double>> figures) {
    figures.forEach((name, values) -> {
      String unit = name.startsWith("drain") ? "events/s" : name.startsWith("latency") || name.startsWith("first") ? "ms"
          : name.contains("CPU") ? "us" : "events";
      results.add(name + ", min of rounds", values.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN), unit);
      results.add(name + ", max of rounds", values.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN), unit);
    });
  }

  private String debeziumClassPath() throws IOException {
    Path file = debezium.resolve("debezium.classpath");
    Path classes = debezium.resolve("classes");
    if (!Files.isRegularFile(file) || !Files.isDirectory(classes)) {
      throw new IllegalStateException("--debezium " + debezium + " holds no built txbox-bench-debezium module:"
          + " build it with ./mvnw -pl txbox-bench-debezium package, and run from the repository's root");
    }
    return classes.toAbsolutePath() + java.io.File.pathSeparator + Files.readString(file).trim();
  }

  /** A Debezium run's slot and publication (both {@code slot}), its topic and its offsets file. */
  private record Stream(String slot, String topic, Path offsets) {}

  /** A fresh slot, publication and topic named after {@code slot}, on Debezium's emptied table. */
  private Stream debeziumStream(String slot) throws Exception {
    db.execute("TRUNCATE " + BenchDatabase.SCHEMA + "." + TABLE);
    db.execute("SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')");
    db.execute("CREATE PUBLICATION " + slot + " FOR TABLE " + BenchDatabase.SCHEMA + "." + TABLE);
    String topic = slot.replace('_', '-');
    kafka.createTopic(topic, 8);
    return new Stream(slot, topic, Files.createTempFile("dbz-offsets", ".dat"));
  }

  private DebeziumProcess engine(String classPath, Stream stream, Map<String, String> extra) throws IOException {
    return new DebeziumProcess(classPath, url, kafka.bootstrapServers(), stream.slot(), stream.topic(), stream.offsets(),
        extra);
  }

  private void dropSlot(String name) throws SQLException {
    db.execute("SELECT pg_drop_replication_slot('" + name + "')");
    db.execute("DROP PUBLICATION " + name);
  }

  private ColdDrain debeziumDrain(String classPath, int round) throws Exception {
    Stream stream = debeziumStream("dbz_drain_" + round);
    writeDebeziumBacklog(events);
    Duration hostBefore = HostCpu.busy();
    ColdDrain drain;
    DebeziumProcess engine = engine(classPath, stream, Map.of("expect", Integer.toString(events)));
    try (engine) {
      drain = ColdDrain.of(events, engine.await(FIRST), engine.await(DRAINED), engine.process, hostBefore);
    } finally {
      dropSlot(stream.slot());
    }
    drain = drain.compiled(engine.log()); // printed as the engine's JVM exited
    report(round, "Debezium", drain);
    return drain;
  }

  private void report(int round, String relay, ColdDrain drain) {
    System.out.printf("round %d: %s drained %,d events at %,.0f/s (first acknowledged in %d ms; CPU per event"
        + " %.1f µs in its process, of which its JIT %.1f µs, and %.1f µs on the host)%n", round, relay, events,
        drain.rate(), drain.firstMillis(), drain.relayCpuMicros(), drain.compileMicros(), drain.hostCpuMicros());
  }

  private ColdDrain txboxDrain(PostgresOutboxStore rows, int round) throws Exception {
    db.execute("TRUNCATE " + rows.operator().outboxTable());
    LogicalReplication replication = LogicalReplication.builder(db.dataSource, rows)
        .slot("txbox_drain_" + round).publication("txbox_drain_" + round).build();
    replication.migrate();
    txbox.backlog(db, Outbox.create(rows.writer()));
    // In a JVM of its own, started for this drain as Debezium's engine is, and timed the same way:
    // a relay warmed by the rounds before would drain faster than a cold engine for that alone.
    Path log = Files.createTempFile("txbox-bench-logical-relay", ".log");
    Duration hostBefore = HostCpu.busy();
    Process relay = txboxRelay("txbox_drain_" + round, Files.createTempFile("txbox-acks", ".txt"), log, events);
    ColdDrain drain;
    try {
      drain = ColdDrain.of(events, Await.line("txbox's relay", relay, log, FIRST),
          Await.line("txbox's relay", relay, log, DRAINED), relay, hostBefore);
    } finally {
      relay.destroy();
      relay.waitFor(60, TimeUnit.SECONDS);
      awaitSlot("txbox_drain_" + round, false);
      replication.drop();
    }
    drain = drain.compiled(log); // printed as the relay's JVM exited
    report(round, "txbox", drain);
    return drain;
  }

  /**
   * The floor of any cold drain through kafka-clients: a JVM started as the relays' are, that only
   * sends the same records from memory ({@link ColdProducerProcess}).
   */
  private ColdDrain producerDrain(int round) throws Exception {
    Path log = Files.createTempFile("txbox-bench-cold-producer", ".log");
    Duration hostBefore = HostCpu.busy();
    Process producer = ChildProcess.start(RELAY_JVM_OPTIONS, ColdProducerProcess.class.getName(),
        List.of(kafka.bootstrapServers(), BenchBroker.RELAY_DESTINATION, Integer.toString(events)), log);
    ColdDrain drain;
    try {
      drain = ColdDrain.of(events, Await.line("the cold producer", producer, log, FIRST),
          Await.line("the cold producer", producer, log, DRAINED), producer, hostBefore);
      producer.waitFor(60, TimeUnit.SECONDS); // it exits once all are acknowledged, and prints its JIT's total
    } finally {
      producer.destroy();
    }
    drain = drain.compiled(log);
    report(round, PRODUCER_ALONE, drain);
    return drain;
  }

  /** Writes a backlog into Debezium's table in transactions of 1,000, the shape txbox's backlog has. */
  private void writeDebeziumBacklog(int count) throws Exception {
    for (int done = 0; done < count; done += 1000) {
      try (Connection c = db.dataSource.getConnection()) {
        c.setAutoCommit(false);
        try (PreparedStatement p = c.prepareStatement(insertEvent())) {
          for (int i = done; i < Math.min(count, done + 1000); i++) {
            bindEvent(p, UUID.randomUUID(), i);
            p.addBatch();
          }
          p.executeBatch();
        }
        c.commit();
      }
    }
  }

  /** Debezium's outbox table as its documentation shows it. */
  static String createTable() {
    return "CREATE TABLE IF NOT EXISTS " + BenchDatabase.SCHEMA + "." + TABLE + " (id uuid PRIMARY KEY,"
        + " aggregatetype varchar(255) NOT NULL, aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL,"
        + " payload jsonb)";
  }

  static String insertEvent() {
    return "INSERT INTO " + BenchDatabase.SCHEMA + "." + TABLE
        + " (id, aggregatetype, aggregateid, type, payload) VALUES (?, 'orders', ?, 'OrderPlaced', ?::jsonb)";
  }

  /** The same event as {@link Events#orderPlaced}: a customer key and a ~300-byte JSON payload. */
  static void bindEvent(PreparedStatement p, UUID id, long order) throws SQLException {
    io.txbox.Message m = Events.orderPlaced("orders", order);
    p.setObject(1, id);
    p.setString(2, m.key());
    p.setString(3, new String(m.payload(), StandardCharsets.UTF_8));
  }

  /**
   * Commit → Kafka ack at 1,000 events/s of one event per transaction (p50 and p99 in ms), and
   * the relay process's CPU per event written, both from the process's own records: each relay
   * runs in a JVM of its own and writes down when each event was acknowledged.
   */
  private record Timing(double p50, double p99, double cpuMicrosPerEvent) {}

  /** Writes one event in the caller's transaction and returns its id. */
  private interface EventWriter {
    String write(Connection transaction, long n) throws SQLException;
  }

  private Timing debeziumLatency(String classPath, int round) throws Exception {
    Stream stream = debeziumStream("dbz_latency_" + round);
    Path acks = Files.createTempFile("dbz-acks", ".txt");
    Map<String, Long> committed = new ConcurrentHashMap<>();
    double cpu;
    try (DebeziumProcess engine = engine(classPath, stream, Map.of("acks", acks.toString()))) {
      engine.await(Pattern.compile("engine started"));
      awaitSlot(stream.slot(), true);
      cpu = cpuPerEvent(engine.process, committed, (c, n) -> {
        UUID id = UUID.randomUUID();
        try (PreparedStatement p = c.prepareStatement(insertEvent())) {
          bindEvent(p, id, n);
          p.executeUpdate();
        }
        return id.toString();
      });
    }
    awaitSlot(stream.slot(), false);
    dropSlot(stream.slot());
    return timing("Debezium", round, committed, acks, cpu);
  }

  private Timing txboxLatency(PostgresOutboxStore rows, int round) throws Exception {
    String slot = "txbox_latency_" + round;
    String topic = "txbox-latency-" + round;
    kafka.createTopic(topic, 8);
    LogicalReplication replication = LogicalReplication.builder(db.dataSource, rows).slot(slot).publication(slot).build();
    replication.migrate();
    Path acks = Files.createTempFile("txbox-acks", ".txt");
    Map<String, Long> committed = new ConcurrentHashMap<>();
    Process relay = txboxRelay(slot, acks);
    double cpu;
    try {
      awaitSlot(slot, true);
      Outbox outbox = Outbox.create(rows.writer());
      cpu = cpuPerEvent(relay, committed, (c, n) -> {
        Message m = Events.orderPlaced(topic, n);
        outbox.send(c, m);
        return m.id().toString();
      });
    } finally {
      relay.destroy(); // SIGTERM: it writes its acknowledgements down
      relay.waitFor(60, TimeUnit.SECONDS);
    }
    awaitSlot(slot, false);
    replication.drop();
    return timing("txbox", round, committed, acks, cpu);
  }

  private Process txboxRelay(String slot, Path acks) throws IOException {
    return txboxRelay(slot, acks, Files.createTempFile("txbox-bench-logical-relay", ".log"), 0);
  }

  /** txbox's relay in a JVM of its own; with {@code expect} above 0 it prints when that many are acknowledged. */
  private Process txboxRelay(String slot, Path acks, Path log, int expect) throws IOException {
    List<String> args = new ArrayList<>(
        List.of(url, BenchDatabase.SCHEMA, "dbz_cmp_", slot, kafka.bootstrapServers(), acks.toString()));
    if (expect > 0) {
      args.add(Integer.toString(expect));
    }
    return ChildProcess.start(RELAY_JVM_OPTIONS, LogicalRelayProcess.class.getName(), args, log);
  }

  /** Writes paced events and returns the relay's CPU time per event written, in µs. */
  private double cpuPerEvent(Process relay, Map<String, Long> committed, EventWriter writer) throws Exception {
    Duration before = cpu(relay);
    long written = writePaced(committed, writer);
    TimeUnit.SECONDS.sleep(3); // the last events arrive
    return (cpu(relay).minus(before).toNanos() / 1000.0) / written;
  }

  static Duration cpu(Process process) {
    return process.info().totalCpuDuration().orElseThrow(
        () -> new IllegalStateException("this system does not report a process's CPU time"));
  }

  private Timing timing(String relay, int round, Map<String, Long> committed, Path acks, double cpu) throws IOException {
    Map<String, Long> acked = new HashMap<>();
    for (String line : Files.readAllLines(acks)) {
      String[] f = line.split(" ");
      acked.put(f[0], Long.parseLong(f[1]));
    }
    List<Long> micros = new ArrayList<>();
    committed.forEach((id, at) -> {
      Long ack = acked.get(id);
      if (ack != null) {
        micros.add(Math.max(0, ack - at));
      }
    });
    long[] sorted = WriteOverhead.sorted(micros);
    Timing t = new Timing(WriteOverhead.percentile(sorted, 50) / 1000.0, WriteOverhead.percentile(sorted, 99) / 1000.0, cpu);
    System.out.printf("round %d: %s %,d of %,d measured, p50 %.1f ms, p99 %.1f ms, CPU %.0f us per event%n",
        round, relay, sorted.length, committed.size(), t.p50(), t.p99(), t.cpuMicrosPerEvent());
    return t;
  }

  private void awaitSlot(String slot, boolean active) throws Exception {
    String sql = "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + slot + "' AND active";
    Await.until(() -> (db.queryLong(sql) == 1) == active, "slot " + slot + (active ? " was not taken" : " was not let go"));
  }

  /**
   * Two writers commit 1,000 events/s in all, one per transaction, for the warm-up and then
   * {@code latencySeconds}; only the latter are recorded, as epoch microseconds after the commit.
   *
   * @return the events written, warm-up included
   */
  private long writePaced(Map<String, Long> committed, EventWriter writer) throws Exception {
    int writers = 2;
    long interval = TimeUnit.SECONDS.toNanos(1) * writers / 1000;
    long recordFrom = System.nanoTime() + TimeUnit.SECONDS.toNanos(LogicalBench.WARM_UP_SECONDS);
    long end = recordFrom + TimeUnit.SECONDS.toNanos(latencySeconds);
    java.util.concurrent.atomic.AtomicLong written = new java.util.concurrent.atomic.AtomicLong();
    List<Thread> threads = new ArrayList<>();
    for (int w = 0; w < writers; w++) {
      Thread t = new Thread(() -> {
        try (Connection c = db.dataSource.getConnection()) {
          c.setAutoCommit(false);
          for (long next = System.nanoTime(); next < end; next += interval) {
            String id = writer.write(c, next);
            c.commit();
            written.incrementAndGet();
            if (System.nanoTime() >= recordFrom) {
              committed.put(id, ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now()));
            }
            LockSupport.parkNanos(next + interval - System.nanoTime());
          }
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) {
      t.join();
    }
    return written.get();
  }

  /** Events Debezium sends twice when killed halfway through a backlog and started again. */
  private double debeziumResends(String classPath, int round) throws Exception {
    Stream stream = debeziumStream("dbz_kill_" + round);
    writeDebeziumBacklog(killEvents);
    try {
      DebeziumProcess first = engine(classPath, stream, Map.of());
      kafka.awaitRecords(stream.topic(), killEvents / 2);
      first.kill(); // SIGKILL: no offset flush, no slot confirmation
      try (DebeziumProcess second = engine(classPath, stream, Map.of())) {
        long twice = settledRecords(stream.topic(), killEvents) - killEvents;
        System.out.printf("round %d: Debezium killed at half of %,d events sent %,d twice%n", round, killEvents, twice);
        return twice;
      }
    } finally {
      dropSlot(stream.slot());
    }
  }

  /** Events txbox's logical relay sends twice when killed halfway through a backlog and started again. */
  private double txboxResends(PostgresOutboxStore rows, int round) throws Exception {
    db.execute("TRUNCATE " + rows.operator().outboxTable());
    String slot = "txbox_kill_" + round;
    String topic = "txbox-kill-" + round;
    kafka.createTopic(topic, 8);
    LogicalReplication replication = LogicalReplication.builder(db.dataSource, rows).slot(slot).publication(slot).build();
    replication.migrate();
    try {
      LogicalBench.backlog(db, Outbox.create(rows.writer()), killEvents, topic);
      Process first = txboxRelay(slot, Files.createTempFile("txbox-acks", ".txt"));
      try {
        kafka.awaitRecords(topic, killEvents / 2);
      } finally {
        first.destroyForcibly().waitFor(30, TimeUnit.SECONDS); // SIGKILL
      }
      try (var successor = txbox.relay(replication, url, kafka, io.txbox.spi.Metrics.NONE).start()) {
        long twice = settledRecords(topic, killEvents) - killEvents;
        System.out.printf("round %d: txbox killed at half of %,d events sent %,d twice%n", round, killEvents, twice);
        return twice;
      }
    } finally {
      replication.drop();
    }
  }

  /** The records in {@code topic} once it holds {@code atLeast} and nothing more arrives for 3 s. */
  private long settledRecords(String topic, long atLeast) throws Exception {
    kafka.awaitRecords(topic, atLeast);
    long records;
    do {
      records = kafka.records(topic);
      TimeUnit.SECONDS.sleep(3);
    } while (kafka.records(topic) != records);
    return records;
  }
}
