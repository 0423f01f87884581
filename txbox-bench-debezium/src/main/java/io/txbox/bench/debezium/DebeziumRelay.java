package io.txbox.bench.debezium;

import io.debezium.embedded.Connect;
import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * Debezium's embedded engine (PostgreSQL connector, {@code pgoutput}, the outbox Event Router)
 * publishing to Kafka as Debezium Server's Kafka sink does: each batch is sent, every
 * acknowledgement awaited, then the batch marked processed, so Debezium commits its offsets (and
 * confirms the slot) only past acknowledged events. Started by {@code txbox-bench debezium} in a
 * JVM of its own.
 *
 * <p>Arguments are {@code key=value}: {@code host port database user schema table slot
 * publication topic bootstrap offsets}, optionally {@code acks} (a file that gets one line
 * "event-id epoch-microseconds" per acknowledgement when the engine stops), {@code expect} (prints
 * "first acknowledged in X ms" at the first acknowledgement and "drained N in X ms" when N events
 * are acknowledged, both timed from when {@code main} builds the relay), and {@code
 * debezium.<property>} for any engine or connector property. Runs until its standard input says
 * {@code stop} or closes.
 */
public final class DebeziumRelay {
  private final ConcurrentLinkedQueue<String> acks = new ConcurrentLinkedQueue<>();
  private final AtomicLong acknowledged = new AtomicLong();
  private final KafkaProducer<byte[], byte[]> producer;
  private final String topic;
  private final long expect;
  /** Whether acknowledgements are kept for the acks file; a drain, which writes none, does not pay for them. */
  private final boolean keepAcks;
  private final long startedAt = System.nanoTime();

  private DebeziumRelay(Map<String, String> args) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    this.producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    this.topic = args.get("topic");
    this.expect = Long.parseLong(args.getOrDefault("expect", "0"));
    this.keepAcks = args.containsKey("acks");
  }

  public static void main(String[] arguments) throws Exception {
    Map<String, String> args = new HashMap<>();
    for (String a : arguments) {
      int eq = a.indexOf('=');
      args.put(a.substring(0, eq), a.substring(eq + 1));
    }
    DebeziumRelay relay = new DebeziumRelay(args);
    ExecutorService runner = Executors.newSingleThreadExecutor();
    try (DebeziumEngine<ChangeEvent<SourceRecord, SourceRecord>> engine = DebeziumEngine.create(Connect.class)
        .using(engineProperties(args))
        .notifying(relay::handleBatch)
        .build()) {
      Future<?> running = runner.submit(engine);
      System.out.println("engine started");
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String line;
      while ((line = in.readLine()) != null && !line.equals("stop") && !running.isDone()) {
        // waits for the benchmark
      }
    }
    runner.shutdown();
    relay.producer.close();
    if (args.containsKey("acks")) {
      try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(args.get("acks"))))) {
        relay.acks.forEach(out::println);
      }
    }
    System.out.println("stopped after " + relay.acknowledged.get() + " acknowledged");
    System.exit(0);
  }

  private static Properties engineProperties(Map<String, String> args) {
    Properties p = new Properties();
    p.setProperty("name", "txbox-bench");
    p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
    p.setProperty("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore");
    p.setProperty("offset.storage.file.filename", args.get("offsets"));
    p.setProperty("database.hostname", args.get("host"));
    p.setProperty("database.port", args.get("port"));
    p.setProperty("database.user", args.get("user"));
    p.setProperty("database.password", "");
    p.setProperty("database.dbname", args.get("database"));
    p.setProperty("topic.prefix", "bench");
    p.setProperty("plugin.name", "pgoutput");
    p.setProperty("slot.name", args.get("slot"));
    p.setProperty("publication.name", args.get("publication"));
    p.setProperty("publication.autocreate.mode", "disabled");
    p.setProperty("table.include.list", args.get("schema") + "." + args.get("table"));
    p.setProperty("snapshot.mode", "no_data");
    p.setProperty("tombstones.on.delete", "false");
    p.setProperty("transforms", "outbox");
    p.setProperty("transforms.outbox.type", "io.debezium.transforms.outbox.EventRouter");
    p.setProperty("transforms.outbox.route.topic.replacement", args.get("topic"));
    args.forEach((k, v) -> {
      if (k.startsWith("debezium.")) {
        p.setProperty(k.substring("debezium.".length()), v);
      }
    });
    return p;
  }

  /** Sends the batch, waits for every acknowledgement, then marks it processed. */
  private void handleBatch(List<ChangeEvent<SourceRecord, SourceRecord>> batch,
      DebeziumEngine.RecordCommitter<ChangeEvent<SourceRecord, SourceRecord>> committer) throws InterruptedException {
    List<Future<?>> sends = new ArrayList<>(batch.size());
    for (ChangeEvent<SourceRecord, SourceRecord> event : batch) {
      SourceRecord r = event.value();
      if (r == null || r.value() == null) {
        continue;
      }
      String id = r.headers().lastWithName("id") == null ? "" : String.valueOf(r.headers().lastWithName("id").value());
      List<Header> headers = List.of(new RecordHeader("id", id.getBytes(StandardCharsets.UTF_8)));
      ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, null, bytes(r.key()), bytes(r.value()), headers);
      sends.add(producer.send(record, (metadata, error) -> {
        if (error == null) {
          if (keepAcks) {
            acks.add(id + " " + ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now()));
          }
          long count = acknowledged.incrementAndGet();
          if (count == 1 && expect > 0) {
            System.out.printf("first acknowledged in %d ms%n", (System.nanoTime() - startedAt) / 1_000_000);
          }
          if (count == expect) {
            System.out.printf("drained %d in %d ms%n", expect, (System.nanoTime() - startedAt) / 1_000_000);
          }
        }
      }));
    }
    for (Future<?> send : sends) {
      try {
        send.get();
      } catch (java.util.concurrent.ExecutionException e) {
        throw new IllegalStateException("Kafka refused an event; the engine stops", e.getCause());
      }
    }
    for (ChangeEvent<SourceRecord, SourceRecord> event : batch) {
      committer.markProcessed(event);
    }
    committer.markBatchFinished();
  }

  private static byte[] bytes(Object value) {
    if (value == null) {
      return null;
    }
    if (value instanceof byte[] b) {
      return b;
    }
    return String.valueOf(value).getBytes(StandardCharsets.UTF_8);
  }
}
