package io.txbox.kafka;

import io.txbox.Inbox;
import io.txbox.InboxBatchHandler;
import io.txbox.InboxHandler;
import io.txbox.InboxQueue;
import io.txbox.WhenExhausted;
import io.txbox.kafka.internal.ClientProperties;
import io.txbox.kafka.internal.KafkaClientVersion;
import io.txbox.spi.Intake;
import io.txbox.spi.Subscriber;
import io.txbox.spi.support.DeliveryLoop;
import io.txbox.spi.support.RetryRequests;
import io.txbox.spi.support.SubscriberBuilder;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Feeds Kafka topics into an {@link Inbox}: each record is received by the inbox (recorded and
 * handled in one database transaction), and its offset is committed only after that transaction
 * committed. A crash between the two redelivers the record, and the inbox recognises it as a
 * duplicate, so the handler's side effects happen once.
 *
 * <pre>{@code
 * KafkaSubscriber subscriber = KafkaSubscriber.builder(inbox, "inventory", (tx, message, key) -> reserve(tx, message))
 *     .bootstrapServers("kafka:9092")
 *     .topics("orders")
 *     .build()
 *     .start();
 * ...
 * subscriber.close(); // finishes the record in hand, commits, leaves the group
 * }</pre>
 *
 * <p>Fed into an {@link InboxQueue} instead ({@link #builder(InboxQueue)}), each record is stored
 * and its offset committed at once, and the queue's workers process it at their own pace.
 *
 * <p>The consumer name is the inbox consumer and, by default, the Kafka group id. Records of a
 * partition are handled one after another, in order, up to {@link Builder#batchSize} of them in one
 * transaction (default {@value SubscriberBuilder#DEFAULT_BATCH_SIZE}); a record whose handler fails is retried with
 * the retry policy's backoff while its partition is paused. Once the policy gives up, the message
 * is dead-lettered in the inbox and its key parked, and the partition goes on; with {@link
 * WhenExhausted#BLOCK} the partition never skips it.
 * With {@link Builder#concurrency(int)} consumers, each on its own thread, partitions are handled
 * in parallel. In-flight work is bounded by {@code concurrency} times {@code max.poll.records}
 * (defaults {@value #DEFAULT_CONCURRENCY} and {@value #DEFAULT_MAX_POLL_RECORDS}).
 * A record that cannot be read as a message at all (a malformed {@code txbox-id}) is logged with
 * its place and skipped, counted by {@link #rejected()}. It reads with {@code
 * isolation.level=read_committed} (Kafka's own default is read_uncommitted): records of an aborted
 * Kafka transaction, such as an exactly-once relay's failed round, are never handed over; give
 * {@code property("isolation.level", "read_uncommitted")} to read them too.
 */
public final class KafkaSubscriber implements Subscriber {
  private static final Logger log = LoggerFactory.getLogger(KafkaSubscriber.class);

  /** Default records handed over per poll: the bound on work in hand. */
  public static final int DEFAULT_MAX_POLL_RECORDS = 500;
  /** Default Kafka consumers (and threads) per subscriber. */
  public static final int DEFAULT_CONCURRENCY = 1;

  private final Intake intake;
  private final String consumerName;
  private final List<String> topics;
  private final Map<String, Object> config;
  private final DeliveryLoop loop;
  private final Duration drainTimeout;
  private final int concurrency;
  private final List<GroupMember> members = new CopyOnWriteArrayList<>();
  private RetryRequests retryRequests;

  private KafkaSubscriber(Builder b, SubscriberBuilder.Shared shared) {
    this.intake = shared.intake();
    this.consumerName = shared.consumerName();
    this.topics = List.copyOf(b.topics);
    this.config = Map.copyOf(b.config);
    this.loop = shared.loop();
    this.drainTimeout = shared.drainTimeout();
    this.concurrency = shared.concurrency();
  }

  /** A builder for a subscriber that hands messages to {@code handler} through {@code inbox}. */
  public static Builder builder(Inbox inbox, String consumerName, InboxHandler handler) {
    return new Builder(Intake.inbox(inbox, consumerName, handler));
  }

  /**
   * A builder for a subscriber that hands each batch's new messages to {@code handler} at once,
   * through {@code inbox}, for set-based work; one at a time where a batch failed.
   */
  public static Builder builder(Inbox inbox, String consumerName, InboxBatchHandler handler) {
    return new Builder(Intake.inbox(inbox, consumerName, handler));
  }

  /**
   * A builder for a subscriber that stores records in {@code queue} and acknowledges them at once;
   * the queue's workers process them. The consumer name is the queue's.
   */
  public static Builder builder(InboxQueue queue) {
    return new Builder(Intake.queue(queue));
  }

  /**
   * A builder for a subscriber that hands each record to {@code intake} and acknowledges it
   * after {@code take} returned: for intakes that run in a framework's own transactions, such as
   * the txbox Spring Boot starter's. The consumer name is the intake's.
   */
  public static Builder builder(Intake intake) {
    return new Builder(Objects.requireNonNull(intake, "intake must not be null"));
  }

  /** Joins the group and starts consuming in the background. */
  @Override
  public synchronized KafkaSubscriber start() {
    if (!members.isEmpty()) {
      throw new IllegalStateException("subscriber " + consumerName + " is already started");
    }
    GroupMember.Shared shared = new GroupMember.Shared(consumerName, topics, loop);
    for (int i = 0; i < concurrency; i++) {
      GroupMember member = new GroupMember(shared, memberConfig(i),
          "txbox-subscriber-" + consumerName + (concurrency == 1 ? "" : "-" + i));
      members.add(member);
      member.start();
    }
    retryRequests = RetryRequests.start(intake.consumer(), intake::runRetryRequests);
    return this;
  }

  /** Messages handled and committed by this subscriber (queued, for a queue's subscriber). */
  @Override
  public long processed() {
    return loop.counters().processed();
  }

  /** Redelivered messages the inbox recognised, which the handler did not see again. */
  @Override
  public long duplicates() {
    return loop.counters().duplicates();
  }

  @Override
  public long parked() {
    return loop.counters().parked();
  }

  @Override
  public long deadLettered() {
    return loop.counters().deadLettered();
  }

  /** Whether the last poll of any of its consumers failed. */
  @Override
  public boolean isTroubled() {
    return members.stream().anyMatch(GroupMember::isTroubled) || retryRequestsTroubled();
  }

  private synchronized boolean retryRequestsTroubled() {
    return retryRequests != null && retryRequests.isTroubled();
  }

  @Override
  public long failures() {
    return loop.counters().failures();
  }

  /** Records skipped because they could not be read as messages (a malformed txbox header). */
  @Override
  public long rejected() {
    return loop.counters().rejected();
  }

  /** Finishes the records in hand, commits the handled offsets and leaves the group. */
  @Override
  public synchronized void close() {
    if (members.isEmpty()) {
      return;
    }
    loop.close(); // a partition waiting for a retry is left uncommitted, for the next member at once
    retryRequests.close();
    members.forEach(GroupMember::wakeUp);
    long deadline = System.nanoTime() + drainTimeout.toNanos();
    try {
      for (GroupMember m : members) {
        m.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    members.clear();
  }

  /** The config of member {@code index}: a static member id gets the member's number appended. */
  private Map<String, Object> memberConfig(int index) {
    Object instanceId = config.get(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
    if (instanceId == null || concurrency == 1) {
      return config;
    }
    Map<String, Object> member = new HashMap<>(config);
    member.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId + "-" + index);
    return member;
  }


  /** Builds a {@link KafkaSubscriber}; {@link #build()} checks the settings. */
  public static final class Builder extends SubscriberBuilder<Builder> {
    private List<String> topics = List.of();
    private final Map<String, Object> config = new LinkedHashMap<>();
    private final Map<String, Object> given = new LinkedHashMap<>();

    private Builder(Intake intake) {
      super(intake, DEFAULT_CONCURRENCY);
      config.put(ConsumerConfig.GROUP_ID_CONFIG, consumerName());
      config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
      config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
      config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(DEFAULT_MAX_POLL_RECORDS));
      // Kafka's default, read_uncommitted, hands over records of aborted transactions: the ones a
      // fenced or failed exactly-once round leaves behind. On a topic written without transactions
      // read_committed changes nothing.
      config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    }

    /** {@code bootstrap.servers}. Required. */
    public Builder bootstrapServers(String bootstrapServers) {
      return property(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    }

    /** The topics to consume. Required. */
    public Builder topics(String... topics) {
      this.topics = List.of(topics);
      return this;
    }

    /**
     * Any consumer property, such as {@code group.id} or {@code max.poll.records}. Set
     * {@code group.instance.id} (static membership) to a name that stays the same across restarts
     * of this process, and a restart takes its partitions back without a rebalance; with
     * {@link #concurrency(int)} above 1, each consumer gets {@code -0}, {@code -1}, ... appended.
     * {@link #build()} checks it against the Kafka client's own definitions: an unknown name or a
     * bad value is refused there, naming the property.
     */
    public Builder property(String name, String value) {
      config.put(Objects.requireNonNull(name, "property name must not be null"), value);
      given.put(name, value);
      return this;
    }

    /** Checks the settings and builds the subscriber; it connects on {@link KafkaSubscriber#start()}. */
    public KafkaSubscriber build() {
      KafkaClientVersion.check(); // says so when the build picked an older client than txbox is tested with
      SubscriberBuilder.Shared shared = checkShared(KafkaSubscriber.class);
      ClientProperties.check("consumer", ConsumerConfig.configDef(), given);
      Object servers = config.get(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG);
      if (servers == null || servers.toString().isBlank()) {
        throw new IllegalArgumentException("bootstrap.servers must be set, such as localhost:9092");
      }
      if (topics.isEmpty()) {
        throw new IllegalArgumentException("topics must name at least one topic");
      }
      if (!"false".equals(String.valueOf(config.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG)))) {
        throw new IllegalArgumentException("enable.auto.commit must be false: offsets are committed"
            + " only after the inbox transaction committed");
      }
      int maxPoll = Integer.parseInt(String.valueOf(config.get(ConsumerConfig.MAX_POLL_RECORDS_CONFIG)));
      if (maxPoll < 1 || maxPoll > 10_000) {
        throw new IllegalArgumentException("max.poll.records must be >= 1 and <= 10000, was " + maxPoll);
      }
      return new KafkaSubscriber(this, shared);
    }
  }
}
