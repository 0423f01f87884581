package io.txbox.bench;

import io.txbox.kafka.KafkaPublisher;
import io.txbox.spi.Publisher;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.internal.ChildProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A Kafka broker of its own, with Kafka's ProducerPerformance (acks=all) as the reference. */
final class KafkaBench implements BenchBroker {
  private static final Pattern RATE = Pattern.compile("(\\d+) records sent, ([\\d.]+) records/sec");
  private final KafkaBroker kafka = KafkaBroker.start("1g");

  KafkaBench(int partitions) {
    kafka.createTopic("bench-reference", partitions);
    kafka.createTopic(RELAY_DESTINATION, partitions);
  }

  @Override
  public String reference() {
    return "ProducerPerformance, acks=all, 300 B";
  }

  @Override
  public Publisher publisher() {
    return KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build();
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
    kafka.close();
  }
}
