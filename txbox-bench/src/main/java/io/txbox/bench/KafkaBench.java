package io.txbox.bench;

import io.txbox.Message;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.spi.Publisher;
import io.txbox.testkit.ChildProcess;
import io.txbox.testkit.KafkaBroker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

/** A Kafka broker of its own, with Kafka's ProducerPerformance (acks=all) as the reference. */
final class KafkaBench implements BenchBroker {
  private static final Pattern RATE = Pattern.compile("(\\d+) records sent, ([\\d.]+) records/sec");
  private final KafkaBroker kafka = KafkaBroker.start("1g");
  /** One client for the record counts that waits poll every 20 ms, not one per count. */
  private final Admin admin = kafka.admin();

  KafkaBench(int partitions) {
    kafka.createTopic("bench-reference", partitions);
    kafka.createTopic(RELAY_DESTINATION, partitions);
  }

  /** {@code host:port} of the broker. */
  String bootstrapServers() {
    return kafka.bootstrapServers();
  }

  void createTopic(String name, int partitions) {
    kafka.createTopic(name, partitions);
  }

  /** Returns once {@code topic} holds at least {@code atLeast} records. */
  void awaitRecords(String topic, long atLeast) throws Exception {
    Await.until(() -> records(topic) >= atLeast, topic + " did not reach " + atLeast + " records");
  }

  /** How many records {@code topic} holds: the sum of its partitions' end offsets. */
  long records(String topic) throws Exception {
    int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (int p = 0; p < partitions; p++) {
      latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
    }
    long records = 0;
    for (ListOffsetsResult.ListOffsetsResultInfo info : admin.listOffsets(latest).all().get().values()) {
      records += info.offset();
    }
    return records;
  }

  @Override
  public String reference() {
    return "ProducerPerformance, acks=all, 300 B";
  }

  @Override
  public Publisher publisher() {
    return KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build();
  }

  /**
   * The relays' records, built in memory, through new {@link KafkaPublisher}s in batches of
   * {@code batchSize}, {@code inFlight} batches published at once (each publish waits for its
   * acknowledgements, as a relay's does): what the relays could reach with no database, and what a
   * second batch in flight would add. Each sender thread has a publisher of its own, since
   * {@code KafkaPublisher.publish} is synchronized: two threads sharing one would take turns.
   * Timed from the publishers' creation, as the relays' drains are.
   */
  double publisherRate(int messages, int batchSize, int inFlight) throws Exception {
    List<List<Message>> batches = new ArrayList<>();
    for (int done = 0; done < messages; done += batchSize) {
      List<Message> batch = new ArrayList<>(batchSize);
      for (int i = done; i < Math.min(messages, done + batchSize); i++) {
        batch.add(Events.orderPlaced(RELAY_DESTINATION, i));
      }
      batches.add(batch);
    }
    AtomicInteger next = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    ExecutorService senders = Executors.newFixedThreadPool(inFlight);
    long start = System.nanoTime();
    List<Publisher> publishers = new ArrayList<>();
    try {
      List<Future<?>> running = new ArrayList<>();
      for (int t = 0; t < inFlight; t++) {
        Publisher publisher = publisher();
        publishers.add(publisher);
        running.add(senders.submit(() -> {
          for (int b = next.getAndIncrement(); b < batches.size(); b = next.getAndIncrement()) {
            failed.addAndGet(batches.get(b).size() - publisher.publish(batches.get(b)).acknowledged());
          }
        }));
      }
      for (Future<?> f : running) {
        f.get();
      }
    } finally {
      senders.shutdown();
      publishers.forEach(Publisher::close);
    }
    double rate = messages / ((System.nanoTime() - start) / 1e9);
    if (failed.get() > 0) {
      throw new IllegalStateException(failed.get() + " of " + messages + " records were not acknowledged");
    }
    return rate;
  }

  @Override
  public double bareRate(int messages) throws Exception {
    Path log = Files.createTempFile("producer-performance", ".log");
    Process p = ChildProcess.start(List.of("-Xmx512m"), "org.apache.kafka.tools.ProducerPerformance",
        List.of("--topic", "bench-reference", "--num-records", Integer.toString(messages), "--record-size", "300",
            "--throughput", "-1", "--producer-props", "bootstrap.servers=" + kafka.bootstrapServers(), "acks=all"),
        log);
    if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
      throw new IllegalStateException("ProducerPerformance failed: " + Files.readString(log));
    }
    Matcher last = null;
    for (String line : Files.readAllLines(log)) {
      Matcher m = RATE.matcher(line);
      if (m.find() && Long.parseLong(m.group(1)) == messages) {
        last = m;
      }
    }
    if (last == null) {
      throw new IllegalStateException("no summary line in ProducerPerformance output: " + Files.readString(log));
    }
    return Double.parseDouble(last.group(2));
  }

  @Override
  public void close() {
    admin.close();
    kafka.close();
  }
}
