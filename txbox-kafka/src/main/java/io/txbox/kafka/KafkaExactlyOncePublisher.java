package io.txbox.kafka;

import io.txbox.Message;
import io.txbox.TxboxException;
import io.txbox.kafka.internal.ClientProperties;
import io.txbox.kafka.internal.KafkaClientVersion;
import io.txbox.kafka.internal.KafkaErrors;
import io.txbox.kafka.internal.ProgressTopic;
import io.txbox.kafka.internal.RecordMessages;
import io.txbox.kafka.internal.TopicCheck;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.FencedException;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.SendScope;
import io.txbox.spi.TransactionalPublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes relay rounds to Kafka exactly once, for {@link io.txbox.Delivery#EXACTLY_ONCE}: each
 * round is one Kafka transaction holding its records and, in the progress topic, each bucket's new
 * checkpoint, so a consumer reading with {@code isolation.level=read_committed} sees every event
 * once, whatever happens to relays and brokers.
 *
 * <pre>{@code
 * Relay relay = Relay.builder(store, KafkaExactlyOncePublisher.builder()
 *         .bootstrapServers("kafka-1:9092,kafka-2:9092")
 *         .build())
 *     .delivery(Delivery.EXACTLY_ONCE)
 *     .build()
 *     .start();
 * }</pre>
 *
 * <ul>
 *   <li><b>Transactional id</b>: {@code <prefix><subscription>.<member>}, one per relay process
 *       (prefix {@value #DEFAULT_TRANSACTIONAL_ID_PREFIX} by default).
 *   <li><b>Progress</b>: the progress topic ({@code <prefix>progress.<subscription>} by default;
 *       compacted, eight partitions, bucket {@code b} in partition {@code b % 8}, created on first
 *       use) holds one record per bucket and committed round: the bucket's checkpoint, written in
 *       the round's transaction.
 *   <li><b>Take-over</b>: before a relay publishes a bucket it claimed, it fences the bucket's
 *       previous owner ({@code Admin.fenceProducers} on its transactional id: an open transaction
 *       of a relay that was frozen or cut off is aborted, its later sends refused), then reads the
 *       bucket's last committed checkpoint back from the progress topic.
 * </ul>
 *
 * <p>The records are those of {@link KafkaPublisher}, with the same headers. One producer sends
 * every topic, so keep {@code batch.size} at or below every topic's {@code max.message.bytes}; a
 * single record larger than its topic's limit is refused before it is sent, as there.
 */
public final class KafkaExactlyOncePublisher implements TransactionalPublisher {
  private static final Logger log = LoggerFactory.getLogger(KafkaExactlyOncePublisher.class);
  /** Default start of every transactional id and of the progress topic's name. */
  public static final String DEFAULT_TRANSACTIONAL_ID_PREFIX = "txbox-";
  /** Longest a take-over or a read of the progress waits for Kafka. */
  private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(30);

  private final Map<String, Object> config;
  private final Function<Message, String> topicRouter;
  private final SendScope sendScope;
  private final String transactionalIdPrefix;
  private final String progressTopicName;
  private final TopicCheck topics;
  private String subscription;
  private String transactionalId;
  private ProgressTopic progress;
  private KafkaProducer<byte[], byte[]> producer;
  private boolean inTransaction;
  private boolean toldNoListing;
  /** The notes beside the checkpoints the last take-over read. */
  private Map<Integer, String> notes = Map.of();

  private KafkaExactlyOncePublisher(Builder b) {
    this.config = Map.copyOf(b.config);
    this.topicRouter = b.topicRouter;
    this.sendScope = b.sendScope;
    this.transactionalIdPrefix = b.transactionalIdPrefix;
    this.progressTopicName = b.progressTopic;
    this.topics = new TopicCheck(this::newAdmin);
  }

  /** A builder with the producer settings of {@link KafkaPublisher}. */
  public static Builder builder() {
    return new Builder();
  }

  /** The transactional id of this relay, once started. */
  public synchronized String transactionalId() {
    return transactionalId;
  }

  /** The progress topic's name, once started. */
  public synchronized String progressTopic() {
    return progress == null ? null : progress.name();
  }

  @Override
  public synchronized void start(String subscription, String member, int buckets, String outboxId) {
    this.subscription = subscription;
    this.transactionalId = transactionalIdOf(member);
    String name = progressTopicName != null ? progressTopicName : transactionalIdPrefix + "progress." + subscription;
    this.progress = ProgressTopic.open(name, buckets, this::newAdmin, config, ADMIN_TIMEOUT, outboxId);
    producer();
    log.info("subscription {}: exactly-once delivery with transactional id {} and progress topic {} ({} partitions)",
        subscription, transactionalId, name, progress.partitions());
  }

  private String transactionalIdOf(String member) {
    return transactionalIdPrefix + subscription + "." + member;
  }

  @Override
  public synchronized Map<Integer, Checkpoint> takeOver(Map<Integer, String> previousOwners,
      Collection<String> liveMembers) {
    Set<String> zombies = new TreeSet<>();
    previousOwners.values().stream().filter(Objects::nonNull).map(this::transactionalIdOf)
        .filter(id -> !id.equals(transactionalId)).forEach(zombies::add);
    if (!zombies.isEmpty()) {
      Set<String> live = new HashSet<>();
      liveMembers.forEach(m -> live.add(transactionalIdOf(m)));
      zombies.addAll(orphans(live));
      fence(zombies);
    }
    producer(); // a producer made again after a failed commit waits for that commit's outcome first
    Map<Integer, ProgressTopic.Kept> kept = progress.read(previousOwners.keySet());
    Map<Integer, Checkpoint> checkpoints = new TreeMap<>();
    Map<Integer, String> read = new TreeMap<>();
    kept.forEach((bucket, k) -> {
      checkpoints.put(bucket, k.checkpoint());
      if (k.note() != null) {
        read.put(bucket, k.note());
      }
    });
    notes = Map.copyOf(read);
    return checkpoints;
  }

  /**
   * The open transactions of this subscription's relays that are neither live nor this one: a relay
   * that died after claiming buckets but before fencing their previous owner leaves that owner's
   * transaction open, holding read_committed consumers back until Kafka times it out. Empty when
   * the broker does not list transactions (before Kafka 3.0, or without DESCRIBE on the ids).
   */
  private Set<String> orphans(Set<String> live) {
    String ours = transactionalIdPrefix + subscription + ".";
    try (Admin admin = newAdmin()) {
      Set<String> orphans = new TreeSet<>();
      for (TransactionListing t : admin.listTransactions(new ListTransactionsOptions()
          .filterStates(List.of(TransactionState.ONGOING))).all().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        String id = t.transactionalId();
        if (id.startsWith(ours) && !id.equals(transactionalId) && !live.contains(id)) {
          orphans.add(id);
        }
      }
      return orphans;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Set.of();
    } catch (ExecutionException | TimeoutException e) {
      if (!toldNoListing) {
        log.warn("subscription {}: cannot list Kafka's open transactions ({}); a relay that died before fencing its"
            + " predecessor leaves that transaction open until transaction.timeout.ms ends it", subscription,
            e.getMessage());
        toldNoListing = true;
      }
      return Set.of();
    }
  }

  private void fence(Set<String> zombies) {
    try (Admin admin = newAdmin()) {
      admin.fenceProducers(zombies).all().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      log.info("subscription {}: fenced the producers of the buckets' previous owners {}", subscription, zombies);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TxboxException("interrupted while fencing " + zombies, e);
    } catch (ExecutionException | TimeoutException e) {
      throw new TxboxException("cannot fence the previous owners' producers " + zombies
          + " (the relay needs the Kafka ACL WRITE on their transactional ids): " + e.getMessage(), e);
    }
  }

  @Override
  public synchronized PublishResult publish(List<Message> batch) {
    Map<Integer, Exception> failures = new HashMap<>();
    List<Future<RecordMetadata>> sends = new ArrayList<>(batch.size());
    try {
      begin();
      for (int i = 0; i < batch.size(); i++) {
        sends.add(null);
        Message m = batch.get(i);
        String topic = topicRouter.apply(m);
        ProducerRecord<byte[], byte[]> record = RecordMessages.toRecord(topic, m);
        Exception refused = refuse(topic, record);
        if (refused != null) {
          failures.put(i, refused); // never sent: the transaction is not spoiled by it
          continue;
        }
        try (SendScope.Entered ignored = sendScope.enter(m)) {
          sends.set(i, producer.send(record));
        }
      }
      producer.flush();
    } catch (RuntimeException e) { // KafkaException, or a producer in a state that refuses the call
      discard(e);
      return PublishResult.allFailed(batch.size(), e);
    }
    for (int i = 0; i < sends.size(); i++) {
      Future<RecordMetadata> send = sends.get(i);
      if (send == null) {
        continue;
      }
      try {
        send.get();
      } catch (ExecutionException e) {
        Exception cause = e.getCause() instanceof Exception c ? c : e;
        failures.put(i, KafkaErrors.classify(cause, topicRouter.apply(batch.get(i))));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        failures.put(i, e);
      }
    }
    return PublishResult.of(batch.size(), failures);
  }

  /** A record Kafka would refuse for good, refused before it is sent: its topic missing, or too large. */
  private Exception refuse(String topic, ProducerRecord<byte[], byte[]> record) {
    if (topics.check(topic) == TopicCheck.Answer.MISSING) {
      return new PermanentPublishException("topic " + topic + " does not exist and the broker does not create"
          + " topics on demand (auto.create.topics.enable is false): create it, or route the destination elsewhere");
    }
    OptionalInt limit = topics.maxMessageBytes(topic);
    int size = RecordMessages.sizeAlone(record);
    if (limit.isPresent() && size > limit.getAsInt() && !compressed()) {
      return new PermanentPublishException(KafkaErrors.tooLarge(topic, size, limit, Integer.MAX_VALUE));
    }
    return null;
  }

  private boolean compressed() {
    Object c = config.get(ProducerConfig.COMPRESSION_TYPE_CONFIG);
    return c != null && !"none".equalsIgnoreCase(c.toString());
  }

  @Override
  public synchronized Map<Integer, String> notes() {
    return notes;
  }

  @Override
  public synchronized void commit(Map<Integer, Checkpoint> checkpoints) {
    commit(checkpoints, Map.of());
  }

  @Override
  public synchronized void commit(Map<Integer, Checkpoint> checkpoints, Map<Integer, String> notes) {
    notes.forEach((bucket, note) -> {
      if (!checkpoints.containsKey(bucket) || note.length() > MAX_NOTE_CHARS) {
        throw new IllegalArgumentException("a note must go with a checkpoint of its bucket and hold at most "
            + MAX_NOTE_CHARS + " characters; bucket " + bucket + "'s has " + note.length());
      }
    });
    try {
      begin();
      checkpoints.forEach((bucket, checkpoint) ->
          producer.send(progress.record(bucket, checkpoint, transactionalId, notes.get(bucket))));
      producer.commitTransaction();
      inTransaction = false;
    } catch (RuntimeException e) {
      discard(e);
      if (fenced(e)) {
        throw new FencedException("Kafka fenced the producer " + transactionalId + ": " + e, e);
      }
      throw new TxboxException("could not commit the round's transaction: " + e, e);
    }
  }

  @Override
  public synchronized void abort() {
    if (producer == null || !inTransaction) {
      return;
    }
    try {
      producer.abortTransaction();
      inTransaction = false;
    } catch (RuntimeException e) {
      discard(e); // a new producer for the same id aborts what this one left open
    }
  }

  private void begin() {
    producer();
    if (!inTransaction) {
      producer.beginTransaction();
      inTransaction = true;
    }
  }

  /** The producer, made and registered with the transaction coordinator when there is none. */
  private KafkaProducer<byte[], byte[]> producer() {
    if (producer == null) {
      Map<String, Object> c = new HashMap<>(config);
      c.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
      KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(c, new ByteArraySerializer(), new ByteArraySerializer());
      try {
        p.initTransactions(); // fences this id's earlier producer, and waits for its open transaction to end
      } catch (RuntimeException e) {
        p.close(Duration.ZERO);
        throw new TxboxException("Kafka refused the transactional producer " + transactionalId + " (the relay needs"
            + " the ACLs WRITE and DESCRIBE on its transactional id, and brokers with transactions): " + e, e);
      }
      producer = p;
      inTransaction = false;
    }
    return producer;
  }

  /** Whether {@code e} says a newer producer of this transactional id, or a fence, took over. */
  private static boolean fenced(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) {
        return true;
      }
    }
    return false;
  }

  /** Drops a producer that failed: the next round makes a new one, which the coordinator sets straight first. */
  private void discard(RuntimeException e) {
    if (fenced(e)) {
      log.warn("subscription {}: Kafka fenced this relay's producer {}: another relay took its buckets over;"
          + " nothing of its open transaction becomes visible", subscription, transactionalId);
    }
    if (producer != null) {
      producer.close(Duration.ZERO);
      producer = null;
    }
    inTransaction = false;
  }

  private Admin newAdmin() {
    return KafkaPublisher.admin(config);
  }

  @Override
  public synchronized void close() {
    abort(); // a transaction left open would hold read_committed consumers back until it timed out
    if (producer != null) {
      producer.close(Duration.ofSeconds(5));
      producer = null;
    }
    if (progress != null) {
      progress.close();
    }
    topics.close();
  }

  /** Builds a {@link KafkaExactlyOncePublisher}; {@link #build()} checks the settings. */
  public static final class Builder {
    private final Map<String, Object> config = new LinkedHashMap<>();
    private final Map<String, Object> given = new LinkedHashMap<>();
    private Function<Message, String> topicRouter = Message::destination;
    private SendScope sendScope = SendScope.NONE;
    private String transactionalIdPrefix = DEFAULT_TRANSACTIONAL_ID_PREFIX;
    private String progressTopic;

    private Builder() {
      config.putAll(KafkaPublisher.producerDefaults());
      // Longer than any round (delivery.timeout.ms), and as short as that allows: it bounds how long a
      // relay that died mid-round, and that no relay fenced, holds read_committed consumers back.
      config.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "40000");
      // A round's first send often meets the previous round's markers still being written
      // (CONCURRENT_TRANSACTIONS): retried after 10 ms rather than the client's 100.
      config.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "10");
    }

    /** {@code bootstrap.servers}. Required. */
    public Builder bootstrapServers(String bootstrapServers) {
      return property(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    }

    /**
     * Any producer property, checked as {@link KafkaPublisher.Builder#property} checks it; txbox
     * sets {@code transactional.id} itself.
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

    /** Entered around handing each message to the producer, for tracing. Default none. */
    public Builder sendScope(SendScope sendScope) {
      this.sendScope = Objects.requireNonNull(sendScope, "sendScope must not be null");
      return this;
    }

    /**
     * Start of each relay's transactional id and of the default progress topic. Default
     * {@value #DEFAULT_TRANSACTIONAL_ID_PREFIX}; give each outbox sharing a Kafka cluster its own.
     */
    public Builder transactionalIdPrefix(String prefix) {
      this.transactionalIdPrefix = prefix;
      return this;
    }

    /** The progress topic. Default {@code <prefix>progress.<subscription>}; one per outbox and subscription. */
    public Builder progressTopic(String topic) {
      this.progressTopic = topic;
      return this;
    }

    /** Checks the settings and builds the publisher; it connects when the relay starts it. */
    public KafkaExactlyOncePublisher build() {
      KafkaClientVersion.check();
      ClientProperties.check("producer", ProducerConfig.configDef(), given);
      Object servers = config.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
      if (servers == null || servers.toString().isBlank()) {
        throw new IllegalArgumentException("bootstrap.servers must be set, such as localhost:9092");
      }
      if (given.containsKey(ProducerConfig.TRANSACTIONAL_ID_CONFIG)) {
        throw new IllegalArgumentException("transactional.id is set by txbox (" + transactionalIdPrefix
            + "<subscription>.<relay>): give transactionalIdPrefix instead");
      }
      if (transactionalIdPrefix == null || !transactionalIdPrefix.matches("[A-Za-z0-9._-]{0,100}")) {
        throw new IllegalArgumentException("transactionalIdPrefix must be at most 100 characters of"
            + " A-Z a-z 0-9 . _ -, was '" + transactionalIdPrefix + "'");
      }
      if (progressTopic != null && !progressTopic.matches("[A-Za-z0-9._-]{1,249}")) {
        throw new IllegalArgumentException("progressTopic must be a Kafka topic name (1 to 249 characters of"
            + " A-Z a-z 0-9 . _ -), was '" + progressTopic + "'");
      }
      String acks = String.valueOf(config.get(ProducerConfig.ACKS_CONFIG));
      if (!acks.equals("all") && !acks.equals("-1")) {
        throw new IllegalArgumentException("acks must be all for exactly-once delivery, was " + acks);
      }
      String idempotence = String.valueOf(config.get(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG));
      if (!idempotence.equals("true")) {
        throw new IllegalArgumentException("enable.idempotence must be true for exactly-once delivery, was "
            + idempotence);
      }
      return new KafkaExactlyOncePublisher(this);
    }
  }
}
