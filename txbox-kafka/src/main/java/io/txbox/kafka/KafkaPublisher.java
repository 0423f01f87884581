package io.txbox.kafka;

import io.txbox.Message;
import io.txbox.kafka.internal.ClientProperties;
import io.txbox.kafka.internal.KafkaClientVersion;
import io.txbox.kafka.internal.KafkaErrors;
import io.txbox.kafka.internal.Producers;
import io.txbox.kafka.internal.RecordMessages;
import io.txbox.kafka.internal.TopicCheck;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.ApiException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes relay batches to Kafka with an idempotent producer and {@code acks=all}. The message
 * key is the record key, so Kafka keeps the per-key order the relay reads in; the destination is
 * the topic unless a router says otherwise.
 *
 * <pre>{@code
 * KafkaPublisher kafka = KafkaPublisher.builder()
 *     .bootstrapServers("kafka-1:9092,kafka-2:9092")
 *     .topicRouter(m -> "prod." + m.destination())
 *     .property("compression.type", "lz4")
 *     .build();
 * }</pre>
 *
 * <p>Every record carries the headers {@value #ID_HEADER}, {@value #TYPE_HEADER}, {@value
 * #VERSION_HEADER} and {@value #CONTENT_TYPE_HEADER}, then the message's own headers (trace
 * context among them). A record the broker refuses for good (too large, a topic that does not
 * exist) is a {@link PermanentPublishException} and is dead-lettered at once.
 *
 * <p><b>Size limits.</b> The publisher reads each topic's {@code max.message.bytes} (again after a
 * minute, and after any refusal) and keeps every batch within it: topics whose limit is below
 * {@code batch.size} are sent by a producer of their own with a smaller {@code batch.size}, since
 * the Kafka client cannot split a refused batch below {@code batch.size} and loops until its
 * network thread dies (KAFKA-8350). An uncompressed record larger than its topic's limit is
 * refused before it is sent, naming the topic, the record's size and the limit; nothing else in
 * its batch waits for it. This needs the {@code DescribeConfigs} permission on the topics; without
 * it, keep {@code batch.size} at or below the smallest topic limit. A producer whose network
 * thread died anyway is found within 100 ms, closed and rebuilt.
 *
 * <table>
 *   <caption>Producer settings txbox sets (any can be overridden with {@link Builder#property}, except the three that guard delivery)</caption>
 *   <tr><th>property</th><th>value</th></tr>
 *   <tr><td>acks</td><td>all (required)</td></tr>
 *   <tr><td>enable.idempotence</td><td>true (required)</td></tr>
 *   <tr><td>max.in.flight.requests.per.connection</td><td>5 (at most 5 required, for order)</td></tr>
 *   <tr><td>linger.ms</td><td>5</td></tr>
 *   <tr><td>batch.size</td><td>262144</td></tr>
 *   <tr><td>delivery.timeout.ms</td><td>30000</td></tr>
 *   <tr><td>request.timeout.ms</td><td>10000</td></tr>
 *   <tr><td>max.block.ms</td><td>10000</td></tr>
 * </table>
 */
public final class KafkaPublisher implements Publisher {
  private static final Logger log = LoggerFactory.getLogger(KafkaPublisher.class);
  /** Header holding the message id (UUID text). */
  public static final String ID_HEADER = "txbox-id";
  /** Header holding the event type. */
  public static final String TYPE_HEADER = "txbox-type";
  /** Header holding the event version. */
  public static final String VERSION_HEADER = "txbox-version";
  /** Header holding the payload's content type. */
  public static final String CONTENT_TYPE_HEADER = "content-type";

  /** Margin over {@code delivery.timeout.ms} before a batch that got no answer is given up. */
  private static final Duration FLUSH_MARGIN = Duration.ofSeconds(10);
  /** The Kafka client's own default {@code max.request.size}. */
  private static final int DEFAULT_MAX_REQUEST_SIZE = 1_048_576;
  /** How often a flush in progress checks that the producers' network threads still live. */
  private static final Duration WATCH_INTERVAL = Duration.ofMillis(100);

  private final Map<String, Object> config;
  private final Function<Message, String> topicRouter;
  private final SendScope sendScope;
  private final TopicCheck topics;
  private final Duration flushLimit;
  private final Producers producers;
  private final boolean compressed;
  private final int maxRequestSize;
  private ExecutorService flusher;

  private KafkaPublisher(Builder b) {
    this.config = Map.copyOf(b.config);
    this.topicRouter = b.topicRouter;
    this.sendScope = b.sendScope;
    this.topics = new TopicCheck(this::newAdmin);
    long deliveryTimeout = Long.parseLong(config.get(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG).toString());
    this.flushLimit = Duration.ofMillis(deliveryTimeout).plus(FLUSH_MARGIN);
    this.flusher = newFlusher();
    this.producers = new Producers(config);
    Object compression = config.get(ProducerConfig.COMPRESSION_TYPE_CONFIG);
    this.compressed = compression != null && !"none".equalsIgnoreCase(compression.toString());
    Object requestSize = config.get(ProducerConfig.MAX_REQUEST_SIZE_CONFIG);
    this.maxRequestSize = requestSize == null ? DEFAULT_MAX_REQUEST_SIZE : Integer.parseInt(requestSize.toString());
  }

  /** A builder with the settings above. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public synchronized PublishResult publish(List<Message> batch) {
    replaceDeadProducers();
    Map<Integer, Exception> failures = new HashMap<>();
    Map<String, Exception> topicFailures = new HashMap<>();
    Map<String, Producers.Handle> producerOf = new HashMap<>();
    Map<String, OptionalInt> limitOf = new HashMap<>();
    Set<String> limitReread = new HashSet<>(); // at most one admin request per topic and batch, whatever it holds
    List<Future<RecordMetadata>> sends = new ArrayList<>(batch.size());
    List<String> topicOf = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      Message m = batch.get(i);
      String topic = topicRouter.apply(m);
      topicOf.add(topic);
      sends.add(null);
      if (!producerOf.containsKey(topic) && !topicFailures.containsKey(topic)) { // once per topic and batch
        Exception missing = checkTopic(topic);
        if (missing != null) {
          topicFailures.put(topic, missing);
        } else {
          limitOf.put(topic, topics.maxMessageBytes(topic));
          producerOf.put(topic, producers.forLimit(limitOf.get(topic)));
        }
      }
      Exception known = topicFailures.get(topic);
      if (known != null) {
        failures.put(i, known); // one failed send per topic and batch, not one wait per record
        continue;
      }
      ProducerRecord<byte[], byte[]> record = RecordMessages.toRecord(topic, m);
      Exception tooLarge = sizeCheck(record, limitOf.get(topic));
      if (tooLarge != null) {
        Exception changed = limitReread.add(topic) ? limitChanged(topic, limitOf.get(topic)) : null;
        if (changed != null) {
          topicFailures.put(topic, changed); // this topic's later records of the batch wait too: order
        }
        failures.put(i, changed != null ? changed : tooLarge); // refused here: nothing else waits for it
        continue;
      }
      Producers.Handle handle = producerOf.get(topic);
      Exception failed = send(handle, record, m, i, sends);
      if (failed != null) {
        Exception classified = KafkaErrors.classify(failed, topic, limitOf.get(topic));
        failures.put(i, classified);
        if (!(classified instanceof PermanentPublishException)) {
          topicFailures.put(topic, failed);
        }
      }
    }
    Set<Producers.Handle> dead = flush(new HashSet<>(producerOf.values()));
    collect(sends, topicOf, producerOf, limitOf, dead, failures);
    return PublishResult.of(batch.size(), failures);
  }

  /** Before a batch: a producer whose network thread died since the last one is closed and rebuilt. */
  private void replaceDeadProducers() {
    List<String> dead = producers.replaceDead();
    if (!dead.isEmpty()) {
      log.error("Kafka producer network thread(s) {} died; closed their producers, new ones send from now on", dead);
      topics.forgetLimits();
    }
  }

  /**
   * Sends one record; returns its error when the send failed at once. A send whose metadata does
   * not arrive blocks for {@code max.block.ms} and then returns an already-failed future instead
   * of throwing: the caller then fails the topic's remaining records of the batch without waiting.
   */
  private Exception send(Producers.Handle handle, ProducerRecord<byte[], byte[]> record, Message m, int index,
      List<Future<RecordMetadata>> sends) {
    try {
      Future<RecordMetadata> future;
      try (SendScope.Entered ignored = sendScope.enter(m)) {
        future = handle.producer().send(record);
      }
      if (!future.isDone()) {
        sends.set(index, future);
        return null;
      }
      future.get();
      sends.set(index, future);
      return null;
    } catch (ExecutionException e) {
      return e.getCause() instanceof Exception cause ? cause : e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return e;
    } catch (KafkaException e) {
      if (!(e instanceof ApiException)) {
        producers.discard(handle); // a producer in a fatal state is rebuilt before the next batch
      }
      return e;
    } catch (IllegalStateException e) {
      return e; // closed above for another topic's record of this batch: sent again with a new one
    }
  }

  private Exception checkTopic(String topic) {
    return switch (topics.check(topic)) {
      case MISSING -> new PermanentPublishException("topic " + topic + " does not exist and the broker does"
          + " not create topics on demand (auto.create.topics.enable is false): create it, or route the"
          + " destination elsewhere");
      case EXISTS, CREATED_ON_SEND, UNKNOWN -> null;
    };
  }

  /**
   * Refuses a record larger than its topic accepts, before it is sent: the broker would refuse it
   * anyway. Only without compression, where the size on the wire is known exactly; a compressed
   * record may fit, and the broker decides (its refusal is then the record's own error, since no
   * batch is larger than the topic's limit).
   */
  private Exception sizeCheck(ProducerRecord<byte[], byte[]> record, OptionalInt limit) {
    if (compressed || limit.isEmpty()) {
      return null;
    }
    int size = RecordMessages.sizeAlone(record);
    if (size <= limit.getAsInt()) {
      return null;
    }
    return new PermanentPublishException(KafkaErrors.tooLarge(record.topic(), size, limit, maxRequestSize));
  }

  /**
   * Before an event is refused as too large: the topic's limit read again. An operator who raised
   * it to deliver the event retries its dead letter at once, and it must not be refused by the
   * limit of a minute ago. A changed limit fails the topic's rest of the batch for a retry, which
   * sends it with the producer for the new limit, rather than switching producers in mid-batch,
   * which could reorder a key's records. Null when the limit is the same.
   */
  private Exception limitChanged(String topic, OptionalInt used) {
    OptionalInt now = topics.maxMessageBytesNow(topic);
    if (now.equals(used)) {
      return null;
    }
    return new IllegalStateException("topic " + topic + "'s max.message.bytes changed from "
        + (used.isPresent() ? used.getAsInt() : "unknown") + " to " + (now.isPresent() ? now.getAsInt() : "unknown")
        + ": sent again with the new limit");
  }

  /**
   * Flushes, but never waits longer than {@code delivery.timeout.ms} plus a margin, and no longer
   * than a producer's network thread lives. An idempotent producer that lost its broker mid-request
   * must fetch a new producer id before it expires batches, so its {@code flush()} can block for as
   * long as the outage lasts; a producer whose network thread died never answers at all. Either
   * way the flush is abandoned and the producer closed (aborting what it still holds) and rebuilt
   * for the next batch.
   *
   * @return the producers whose network thread died during the flush
   */
  private Set<Producers.Handle> flush(Set<Producers.Handle> used) {
    if (used.isEmpty()) {
      return Set.of();
    }
    Future<?> flushed = flusher.submit(() -> used.forEach(h -> h.producer().flush()));
    long deadline = System.nanoTime() + flushLimit.toNanos();
    try {
      while (true) {
        try {
          flushed.get(WATCH_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
          return Set.of();
        } catch (TimeoutException e) {
          Set<Producers.Handle> dead = new HashSet<>();
          used.stream().filter(h -> !h.alive()).forEach(dead::add);
          if (!dead.isEmpty()) {
            log.error("a Kafka producer's network thread died during a send; closing it, and a new producer"
                + " sends the batch again (a topic whose max.message.bytes was lowered below batch.size can"
                + " do this: KAFKA-8350); topic limits are read again");
            abandon(flushed, used);
            return dead;
          }
          if (System.nanoTime() - deadline > 0) {
            log.warn("Kafka did not answer within {}; closing the producer and sending again later", flushLimit);
            abandon(flushed, used);
            return Set.of();
          }
        }
      }
    } catch (ExecutionException e) {
      used.forEach(producers::discard); // the futures carry each record's own error
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      used.forEach(producers::discard);
    }
    return Set.of();
  }

  /**
   * Gives a flush up: its thread is interrupted (it may be parked for ever on a producer that will
   * not answer) and replaced, and the producers are closed, so no later batch waits behind it. The
   * topics' size limits are read again, since a limit lowered under a running producer is one way
   * to wedge it.
   */
  private void abandon(Future<?> flushed, Set<Producers.Handle> used) {
    flushed.cancel(true);
    flusher.shutdownNow();
    flusher = newFlusher();
    used.forEach(producers::discard);
    topics.forgetLimits();
  }

  private void collect(List<Future<RecordMetadata>> sends, List<String> topicOf,
      Map<String, Producers.Handle> producerOf, Map<String, OptionalInt> limitOf, Set<Producers.Handle> dead,
      Map<Integer, Exception> failures) {
    for (int i = 0; i < sends.size(); i++) {
      Future<RecordMetadata> send = sends.get(i);
      if (send == null) {
        continue;
      }
      String topic = topicOf.get(i);
      try {
        send.get(0, TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        failures.put(i, new org.apache.kafka.common.errors.TimeoutException(dead.contains(producerOf.get(topic))
            ? "the Kafka producer's network thread died before Kafka acknowledged; sent again by a new producer"
            : "no acknowledgement from Kafka within " + flushLimit));
      } catch (ExecutionException e) {
        Exception cause = e.getCause() instanceof Exception c ? c : e;
        topics.forget(topic); // a refusal may mean the topic changed: its limit is read again
        failures.put(i, KafkaErrors.classify(cause, topic, limitOf.getOrDefault(topic, OptionalInt.empty())));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        failures.put(i, e);
      }
    }
  }

  private Admin newAdmin() {
    return admin(config);
  }

  /** The producer settings txbox sets (the table above), for both of its Kafka publishers. */
  static Map<String, Object> producerDefaults() {
    Map<String, Object> defaults = new LinkedHashMap<>();
    defaults.put(ProducerConfig.ACKS_CONFIG, "all");
    defaults.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    defaults.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
    defaults.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    defaults.put(ProducerConfig.BATCH_SIZE_CONFIG, "262144");
    defaults.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
    defaults.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    defaults.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000");
    return defaults;
  }

  /** An admin client for the cluster of {@code config}, with its security settings and short timeouts. */
  static Admin admin(Map<String, Object> config) {
    Map<String, Object> admin = new HashMap<>();
    admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, config.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG));
    config.forEach((k, v) -> {
      if (k.startsWith("security.") || k.startsWith("sasl.") || k.startsWith("ssl.")) {
        admin.put(k, v);
      }
    });
    admin.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000);
    admin.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10000);
    return Admin.create(admin);
  }

  @Override
  public synchronized void close() {
    producers.close();
    topics.close();
    flusher.shutdownNow();
  }

  private static ExecutorService newFlusher() {
    return Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "txbox-kafka-flush");
      t.setDaemon(true);
      return t;
    });
  }

  /** Builds a {@link KafkaPublisher}; {@link #build()} checks the settings. */
  public static final class Builder {
    private final Map<String, Object> config = new LinkedHashMap<>();
    private final Map<String, Object> given = new LinkedHashMap<>();
    private Function<Message, String> topicRouter = Message::destination;
    private SendScope sendScope = SendScope.NONE;

    private Builder() {
      config.putAll(producerDefaults());
    }

    /** {@code bootstrap.servers}. Required. */
    public Builder bootstrapServers(String bootstrapServers) {
      return property(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    }

    /**
     * Any producer property, such as {@code compression.type} or security settings. {@link #build()}
     * checks it against the Kafka client's own definitions: an unknown name or a bad value is
     * refused there, naming the property (unknown names are passed on when a plugin, such as
     * {@code interceptor.classes}, is configured).
     */
    public Builder property(String name, String value) {
      config.put(Objects.requireNonNull(name, "property name must not be null"), value);
      given.put(name, value);
      return this;
    }

    /** Maps a message to its topic. Default: the message's destination. */
    public Builder topicRouter(Function<Message, String> topicRouter) {
      this.topicRouter = Objects.requireNonNull(topicRouter, "topicRouter must not be null");
      return this;
    }

    /**
     * Entered around handing each message to the Kafka producer, for tracing instrumentation of the
     * client to join the message's trace. Default none.
     */
    public Builder sendScope(SendScope sendScope) {
      this.sendScope = Objects.requireNonNull(sendScope, "sendScope must not be null");
      return this;
    }

    /** Checks the settings and builds the publisher; the producer connects on first use. */
    public KafkaPublisher build() {
      KafkaClientVersion.check(); // says so when the build picked an older client than txbox is tested with
      ClientProperties.check("producer", ProducerConfig.configDef(), given);
      Object servers = config.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
      if (servers == null || servers.toString().isBlank()) {
        throw new IllegalArgumentException("bootstrap.servers must be set, such as localhost:9092");
      }
      require(ProducerConfig.ACKS_CONFIG, "all", "-1",
          "the relay checkpoints only what every in-sync replica has");
      require(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true", "true",
          "retries must not duplicate or reorder records");
      int inFlight = Integer.parseInt(config.get(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION).toString());
      if (inFlight < 1 || inFlight > 5) {
        throw new IllegalArgumentException(
            "max.in.flight.requests.per.connection must be >= 1 and <= 5 to keep order, was " + inFlight);
      }
      return new KafkaPublisher(this);
    }

    private void require(String name, String value, String alias, String why) {
      String given = String.valueOf(config.get(name));
      if (!given.equals(value) && !given.equals(alias)) {
        throw new IllegalArgumentException(name + " must be " + value + " (" + why + "), was " + given);
      }
    }
  }
}
