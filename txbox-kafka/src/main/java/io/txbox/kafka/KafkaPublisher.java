package io.txbox.kafka;

import io.txbox.Message;
import io.txbox.kafka.internal.KafkaClientVersion;
import io.txbox.kafka.internal.KafkaErrors;
import io.txbox.kafka.internal.TopicCheck;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
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
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
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

  private final Map<String, Object> config;
  private final Function<Message, String> topicRouter;
  private final SendScope sendScope;
  private final TopicCheck topics;
  private final Duration flushLimit;
  private final ExecutorService flusher;
  private Producer<byte[], byte[]> producer;

  private KafkaPublisher(Builder b) {
    this.config = Map.copyOf(b.config);
    this.topicRouter = b.topicRouter;
    this.sendScope = b.sendScope;
    this.topics = new TopicCheck(this::newAdmin);
    long deliveryTimeout = Long.parseLong(config.get(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG).toString());
    this.flushLimit = Duration.ofMillis(deliveryTimeout).plus(FLUSH_MARGIN);
    this.flusher = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "txbox-kafka-flush");
      t.setDaemon(true);
      return t;
    });
  }

  /** A builder with the settings above. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public synchronized PublishResult publish(List<Message> batch) {
    Producer<byte[], byte[]> p = producer();
    Map<Integer, Exception> failures = new HashMap<>();
    Map<String, Exception> topicFailures = new HashMap<>();
    Set<String> checkedTopics = new HashSet<>();
    List<Future<RecordMetadata>> sends = new ArrayList<>(batch.size());
    List<String> topicOf = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      Message m = batch.get(i);
      String topic = topicRouter.apply(m);
      topicOf.add(topic);
      sends.add(null);
      if (checkedTopics.add(topic)) { // once per topic and batch, whatever the broker answered
        Exception missing = checkTopic(topic);
        if (missing != null) {
          topicFailures.put(topic, missing);
        }
      }
      Exception known = topicFailures.get(topic);
      if (known != null) {
        failures.put(i, known); // one failed send per topic and batch, not one wait per record
        continue;
      }
      Exception failed = send(p, topic, m, i, sends);
      if (failed != null) {
        Exception classified = KafkaErrors.classify(failed, topic);
        failures.put(i, classified);
        if (!(classified instanceof PermanentPublishException)) {
          topicFailures.put(topic, failed);
        }
      }
    }
    flush(p);
    collect(sends, topicOf, failures);
    return PublishResult.of(batch.size(), failures);
  }

  /**
   * Sends one record; returns its error when the send failed at once. A send whose metadata does
   * not arrive blocks for {@code max.block.ms} and then returns an already-failed future instead
   * of throwing: the caller then fails the topic's remaining records of the batch without waiting.
   */
  private Exception send(Producer<byte[], byte[]> p, String topic, Message m, int index,
      List<Future<RecordMetadata>> sends) {
    try {
      Future<RecordMetadata> future;
      try (SendScope.Entered ignored = sendScope.enter(m)) {
        future = p.send(record(topic, m));
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
        discardProducer(); // a producer in a fatal state is rebuilt before the next batch
      }
      return e;
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
   * Flushes, but never waits longer than {@code delivery.timeout.ms} plus a margin. An idempotent
   * producer that lost its broker mid-request must fetch a new producer id before it expires
   * batches, so its {@code flush()} can block for as long as the outage lasts; past the limit the
   * producer is closed (aborting what it still holds) and rebuilt for the next batch.
   */
  private void flush(Producer<byte[], byte[]> p) {
    Future<?> flushed = flusher.submit(p::flush);
    try {
      flushed.get(flushLimit.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      log.warn("Kafka did not answer within {}; closing the producer and sending again later", flushLimit);
      discardProducer();
    } catch (ExecutionException e) {
      discardProducer(); // the futures carry each record's own error
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      discardProducer();
    }
  }

  private void collect(List<Future<RecordMetadata>> sends, List<String> topicOf, Map<Integer, Exception> failures) {
    for (int i = 0; i < sends.size(); i++) {
      Future<RecordMetadata> send = sends.get(i);
      if (send == null) {
        continue;
      }
      try {
        send.get(0, TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        failures.put(i, new org.apache.kafka.common.errors.TimeoutException(
            "no acknowledgement from Kafka within " + flushLimit));
      } catch (ExecutionException e) {
        Exception cause = e.getCause() instanceof Exception c ? c : e;
        failures.put(i, KafkaErrors.classify(cause, topicOf.get(i)));
        topics.forget(topicOf.get(i));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        failures.put(i, e);
      }
    }
  }

  private static ProducerRecord<byte[], byte[]> record(String topic, Message m) {
    RecordHeaders headers = new RecordHeaders();
    headers.add(ID_HEADER, utf8(m.id().toString()));
    headers.add(TYPE_HEADER, utf8(m.type()));
    headers.add(VERSION_HEADER, utf8(Integer.toString(m.version())));
    headers.add(CONTENT_TYPE_HEADER, utf8(m.contentType()));
    m.headers().forEach((name, value) -> headers.add(name, utf8(value)));
    byte[] key = m.key() == null ? null : utf8(m.key());
    return new ProducerRecord<>(topic, null, m.createdAt().toEpochMilli(), key, m.payload(), headers);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private Producer<byte[], byte[]> producer() {
    if (producer == null) {
      producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    }
    return producer;
  }

  private void discardProducer() {
    if (producer != null) {
      producer.close(Duration.ZERO);
      producer = null;
    }
  }

  private Admin newAdmin() {
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
    if (producer != null) {
      producer.close(Duration.ofSeconds(10));
      producer = null;
    }
    topics.close();
    flusher.shutdownNow();
  }

  /** Builds a {@link KafkaPublisher}; {@link #build()} checks the settings. */
  public static final class Builder {
    private final Map<String, Object> config = new LinkedHashMap<>();
    private Function<Message, String> topicRouter = Message::destination;
    private SendScope sendScope = SendScope.NONE;

    private Builder() {
      config.put(ProducerConfig.ACKS_CONFIG, "all");
      config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
      config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
      config.put(ProducerConfig.LINGER_MS_CONFIG, "5");
      config.put(ProducerConfig.BATCH_SIZE_CONFIG, "262144");
      config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
      config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
      config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000");
    }

    /** {@code bootstrap.servers}. Required. */
    public Builder bootstrapServers(String bootstrapServers) {
      return property(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    }

    /** Any producer property, such as {@code compression.type} or security settings. */
    public Builder property(String name, String value) {
      config.put(Objects.requireNonNull(name, "property name must not be null"), value);
      return this;
    }

    /** Maps a message to its topic. Default: the message's destination. */
    public Builder topicRouter(Function<Message, String> topicRouter) {
      this.topicRouter = Objects.requireNonNull(topicRouter, "topicRouter must not be null");
      return this;
    }

    /** Checks the settings and builds the publisher; the producer connects on first use. */
    /**
     * Entered around handing each message to the Kafka producer, for tracing instrumentation of the
     * client to join the message's trace. Default none.
     */
    public Builder sendScope(SendScope sendScope) {
      this.sendScope = Objects.requireNonNull(sendScope, "sendScope must not be null");
      return this;
    }

    public KafkaPublisher build() {
      KafkaClientVersion.check(); // says so when the build picked an older client than txbox is tested with
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
