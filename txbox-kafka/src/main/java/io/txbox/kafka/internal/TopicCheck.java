package io.txbox.kafka.internal;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Asks the broker whether a topic exists before the first send to it, and how large a record
 * batch it accepts. Without this, a send to a missing topic blocks for {@code max.block.ms} and
 * then fails like an outage would; with it, a missing topic is a permanent error found in
 * milliseconds, unless the broker creates topics on demand ({@code auto.create.topics.enable}):
 * then the send creates it (producers always ask).
 *
 * <p>The size limit ({@value #TOPIC_LIMIT}) is read again after {@link #LIMIT_TTL}, at once after
 * {@link #forgetLimits()}, and before an event is refused for it ({@link #maxMessageBytesNow}),
 * so that a limit an operator changes is seen, by a retried dead letter at once.
 *
 * <p>A broker that leaves a question unanswered ({@link #ASK_TIMEOUT}) is not asked again for
 * {@link #UNANSWERED_PAUSE}: in an outage each batch would otherwise wait that long for a topic
 * its last failure made the publisher forget, whatever the relay's retry policy says. Sends go on
 * meanwhile with what is known (the topic's existence unknown, its last limit read).
 */
public final class TopicCheck implements AutoCloseable {
  /** What the broker says of a topic. */
  public enum Answer {
    EXISTS,
    /** Missing, and nothing will create it. */
    MISSING,
    /** Missing, and the first send creates it. */
    CREATED_ON_SEND,
    /** The broker could not be asked. */
    UNKNOWN
  }

  static final String BROKER_SETTING = "auto.create.topics.enable";
  /** The topic setting that bounds a record batch. */
  public static final String TOPIC_LIMIT = "max.message.bytes";
  /** How long a topic's size limit is trusted before it is read again. */
  static final Duration LIMIT_TTL = Duration.ofMinutes(1);

  /** How long a question to the broker may wait for its answer. */
  static final Duration ASK_TIMEOUT = Duration.ofSeconds(10);
  /** How long a broker that left a question unanswered is not asked again. */
  static final Duration UNANSWERED_PAUSE = Duration.ofSeconds(30);

  private record Limit(OptionalInt bytes, long readAtNanos) {}

  private final Map<String, Limit> limits = new ConcurrentHashMap<>();

  private final Supplier<Admin> adminFactory;
  private final Set<String> known = ConcurrentHashMap.newKeySet();
  private Admin admin;
  private Boolean brokerCreatesTopics;
  /** Until when the broker is not asked, after it left a question unanswered; 0 for none. */
  private long quietUntilNanos;

  public TopicCheck(Supplier<Admin> adminFactory) {
    this.adminFactory = adminFactory;
  }

  /** Whether {@code topic} exists; UNKNOWN when the broker cannot be asked. */
  public synchronized Answer check(String topic) {
    if (known.contains(topic)) {
      return Answer.EXISTS;
    }
    if (quiet()) {
      return Answer.UNKNOWN;
    }
    try {
      Map<String, ?> found = ask(admin().describeTopics(List.of(topic)).allTopicNames());
      if (found.containsKey(topic)) {
        known.add(topic);
        return Answer.EXISTS;
      }
      return missing();
    } catch (ExecutionException e) {
      return e.getCause() instanceof UnknownTopicOrPartitionException ? missing() : Answer.UNKNOWN;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Answer.UNKNOWN;
    } catch (Exception e) {
      return Answer.UNKNOWN;
    }
  }

  /** Waits for the broker's answer; one that does not come makes the broker {@link #quiet()} for a while. */
  private <T> T ask(KafkaFuture<T> answer) throws InterruptedException, ExecutionException, TimeoutException {
    try {
      return answer.get(ASK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      beQuiet();
      throw e;
    } catch (ExecutionException e) {
      if (e.getCause() instanceof org.apache.kafka.common.errors.TimeoutException) {
        beQuiet(); // the admin client's own deadline, which may come first
      }
      throw e;
    }
  }

  private void beQuiet() {
    quietUntilNanos = System.nanoTime() + UNANSWERED_PAUSE.toNanos();
  }

  /** Whether the broker left a question unanswered less than {@link #UNANSWERED_PAUSE} ago. */
  private boolean quiet() {
    return quietUntilNanos != 0 && System.nanoTime() - quietUntilNanos < 0;
  }

  private Answer missing() {
    return brokerCreatesTopics() ? Answer.CREATED_ON_SEND : Answer.MISSING;
  }

  /** The broker's {@value #BROKER_SETTING}, asked once; false when it cannot be read (denied, say). */
  private boolean brokerCreatesTopics() {
    if (brokerCreatesTopics == null) {
      try {
        int node = ask(admin().describeCluster().nodes()).iterator().next().id();
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(node));
        Config config = ask(admin().describeConfigs(List.of(broker)).all()).get(broker);
        ConfigEntry entry = config == null ? null : config.get(BROKER_SETTING);
        brokerCreatesTopics = entry != null && Boolean.parseBoolean(entry.value());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      } catch (Exception e) {
        brokerCreatesTopics = false;
      }
    }
    return brokerCreatesTopics;
  }

  /**
   * The topic's {@value #TOPIC_LIMIT}: the largest record batch its broker accepts; empty when it
   * cannot be read (the topic does not exist yet, the broker is down, or describing configs is
   * denied). An unreadable limit is asked again after {@link #LIMIT_TTL}, not on every batch.
   */
  public synchronized OptionalInt maxMessageBytes(String topic) {
    Limit cached = limits.get(topic);
    if (cached != null && System.nanoTime() - cached.readAtNanos < LIMIT_TTL.toNanos()) {
      return cached.bytes;
    }
    OptionalInt read = readLimit(topic);
    if (read.isEmpty() && cached != null) {
      read = cached.bytes; // a limit once read stays the best guess while the broker cannot be asked
    }
    limits.put(topic, new Limit(read, System.nanoTime()));
    return read;
  }

  /**
   * The topic's {@value #TOPIC_LIMIT} read from the broker now, whatever was cached: before an
   * event is refused as too large, since an operator may have just raised the limit to deliver
   * it. The cached limit when it cannot be read.
   */
  public synchronized OptionalInt maxMessageBytesNow(String topic) {
    Limit cached = limits.get(topic);
    OptionalInt read = readLimit(topic);
    if (read.isEmpty()) {
      return cached == null ? OptionalInt.empty() : cached.bytes;
    }
    limits.put(topic, new Limit(read, System.nanoTime()));
    return read;
  }

  private OptionalInt readLimit(String topic) {
    if (quiet()) {
      return OptionalInt.empty();
    }
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    try {
      Config config = ask(admin().describeConfigs(List.of(resource)).all()).get(resource);
      ConfigEntry entry = config == null ? null : config.get(TOPIC_LIMIT);
      return entry == null || entry.value() == null ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(entry.value()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return OptionalInt.empty();
    } catch (Exception e) {
      return OptionalInt.empty();
    }
  }

  /** Forgets a topic, so that the next send to it is checked again, its size limit too. */
  public void forget(String topic) {
    known.remove(topic);
    limits.remove(topic);
  }

  /** Forgets every size limit read, so that each is read again before the next send. */
  public void forgetLimits() {
    limits.clear();
  }

  private Admin admin() {
    if (admin == null) {
      admin = adminFactory.get();
    }
    return admin;
  }

  @Override
  public synchronized void close() {
    if (admin != null) {
      admin.close();
    }
  }
}
