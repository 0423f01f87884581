package io.txbox.sqs;

import io.txbox.Message;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.sqs.internal.QueueUrls;
import io.txbox.sqs.internal.SqsClientVersion;
import io.txbox.sqs.internal.ClientSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.BatchResultErrorEntry;
import software.amazon.awssdk.services.sqs.model.QueueDoesNotExistException;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchResponse;

/**
 * Publishes relay batches to Amazon SQS (or an SQS-compatible server) in {@code SendMessageBatch}
 * requests of up to ten messages, each request awaited before the next.
 *
 * <pre>{@code
 * SqsPublisher sqs = SqsPublisher.builder().region("eu-west-1").build();   // credentials: the SDK's chain
 * Relay relay = Relay.builder(store, sqs).build().start();                 // destination: the queue name
 * }</pre>
 *
 * <p>A message's destination is the queue's name (or its URL). On a FIFO queue (a name ending in
 * {@code .fifo}) the message group is the key, so SQS keeps each key's order and hands one key to
 * one consumer at a time, and the deduplication id is the event id, so SQS drops a relay's resend
 * within five minutes; the consumers' inbox absorbs later ones. A standard queue takes the same
 * messages without any order: use it only for events whose order does not matter. The wire
 * format is {@link SqsMessages}'.
 *
 * <p>Permanent failures, dead-lettered at once: a queue that does not exist, a payload over
 * {@link #maxPayloadSize} or a message over {@link Builder#maxMessageSize}, more than {@value
 * SqsMessages#MAX_HEADERS} headers or a header SQS cannot carry, and a message SQS refuses as the
 * sender's fault. Anything else (no connection, throttling, a server error) fails for now, and
 * once a message of a key failed, the batch's later messages of that key are held back.
 */
public final class SqsPublisher implements Publisher {
  /** Default time one request may take, retries by the SDK included. */
  public static final Duration DEFAULT_SEND_TIMEOUT = Duration.ofSeconds(10);
  /** Longest accepted {@link Builder#sendTimeout}. */
  public static final Duration MAX_SEND_TIMEOUT = Duration.ofMinutes(5);
  /** Default largest message, body and attributes: SQS's classic limit, and ElasticMQ's. */
  public static final int DEFAULT_MAX_MESSAGE_SIZE = 262_144;
  /** Largest accepted {@link Builder#maxMessageSize}: SQS's limit since 2025. */
  public static final int MAX_MAX_MESSAGE_SIZE = 1_048_576;
  /** Room kept for the attributes (txbox's metadata and the headers) when the payload is checked. */
  private static final int ATTRIBUTE_ALLOWANCE = 4096;
  /** SQS's most entries per batch request. */
  private static final int MAX_BATCH_ENTRIES = 10;

  private final SqsClient client;
  private final boolean ownClient;
  private final QueueUrls queues;
  private final int maxMessageSize;

  private SqsPublisher(Builder b) {
    this.ownClient = b.client == null;
    this.client = ownClient ? b.clients.build(b.sendTimeout) : b.client;
    this.queues = new QueueUrls(client);
    this.maxMessageSize = b.maxMessageSize;
  }

  /** A builder with the defaults above. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The largest payload a message of {@code maxMessageSize} may carry: a binary payload travels
   * Base64-encoded (4 characters for 3 bytes), and 4 KiB are kept for the attributes. Text
   * payloads are held to the same limit, so that one rule says what is sent.
   */
  public static int maxPayloadSize(int maxMessageSize) {
    return (maxMessageSize - ATTRIBUTE_ALLOWANCE) / 4 * 3;
  }

  @Override
  public synchronized PublishResult publish(List<Message> batch) {
    Map<Integer, Exception> failures = new HashMap<>();
    Set<String> failedKeys = new HashSet<>();
    Chunk chunk = null;
    for (int i = 0; i < batch.size(); i++) {
      Message m = batch.get(i);
      String keyOfQueue = m.destination() + "\n" + m.key();
      if (m.key() != null && failedKeys.contains(keyOfQueue)) {
        failures.put(i, new IllegalStateException("held back: an earlier message of key " + m.key()
            + " in this batch failed, and SQS must get a key's messages in order"));
        continue;
      }
      Pending pending;
      try {
        pending = pending(i, m);
      } catch (Exception e) {
        failures.put(i, e);
        failedKeys.add(keyOfQueue);
        continue;
      }
      if (chunk != null && !chunk.takes(pending, maxMessageSize)) {
        send(chunk, batch, failures, failedKeys);
        chunk = null;
      }
      if (chunk == null) {
        chunk = new Chunk(pending.queueUrl());
      }
      chunk.add(pending);
    }
    if (chunk != null) {
      send(chunk, batch, failures, failedKeys);
    }
    return PublishResult.of(batch.size(), failures);
  }

  /** The message checked and encoded for its queue. */
  private Pending pending(int index, Message m) throws Exception {
    QueueUrls.Queue queue;
    try {
      queue = queues.of(m.destination());
    } catch (QueueDoesNotExistException e) {
      throw new PermanentPublishException("the SQS queue '" + m.destination() + "' does not exist: create it"
          + " (txbox creates no queues; a FIFO queue's name ends in .fifo)", e);
    }
    int maxPayload = maxPayloadSize(maxMessageSize);
    if (m.payloadSize() > maxPayload) {
      throw new PermanentPublishException("message " + m.id() + " has " + m.payloadSize() + " bytes of payload, over"
          + " the " + maxPayload + " that an SQS message of maxMessageSize " + maxMessageSize + " carries (Base64 and"
          + " attributes included): send a reference to the data, or raise maxMessageSize (SQS takes up to "
          + MAX_MAX_MESSAGE_SIZE + ")");
    }
    SqsMessages.Encoded encoded;
    try {
      encoded = SqsMessages.encode(m, queue.fifo());
    } catch (IllegalArgumentException e) {
      throw new PermanentPublishException(e.getMessage(), e);
    }
    if (encoded.size() > maxMessageSize) {
      throw new PermanentPublishException("message " + m.id() + " takes " + encoded.size() + " bytes on SQS (body and"
          + " attributes), over maxMessageSize " + maxMessageSize);
    }
    return new Pending(index, queue.url(), encoded);
  }

  private void send(Chunk chunk, List<Message> batch, Map<Integer, Exception> failures, Set<String> failedKeys) {
    List<SendMessageBatchRequestEntry> entries = new ArrayList<>();
    for (Pending p : chunk.pending) {
      SqsMessages.Encoded e = p.encoded();
      entries.add(SendMessageBatchRequestEntry.builder()
          .id(Integer.toString(p.index()))
          .messageBody(e.body())
          .messageAttributes(e.attributes())
          .messageGroupId(e.groupId())
          .messageDeduplicationId(e.deduplicationId())
          .build());
    }
    try {
      SendMessageBatchResponse response = client.sendMessageBatch(r -> r.queueUrl(chunk.queueUrl).entries(entries));
      for (BatchResultErrorEntry error : response.failed()) {
        int index = Integer.parseInt(error.id());
        String text = "SQS refused message " + batch.get(index).id() + ": " + error.code() + " " + error.message();
        failures.put(index, Boolean.TRUE.equals(error.senderFault())
            ? new PermanentPublishException(text) : new IllegalStateException(text));
        failedKeys.add(batch.get(index).destination() + "\n" + batch.get(index).key());
      }
    } catch (QueueDoesNotExistException e) {
      queues.forget(chunk.queueUrl);
      failAll(chunk, batch, failures, failedKeys, new PermanentPublishException(
          "the queue " + chunk.queueUrl + " does not exist (any more): create it (txbox creates no queues)", e));
    } catch (SdkException e) {
      failAll(chunk, batch, failures, failedKeys, e);
    }
  }

  private static void failAll(Chunk chunk, List<Message> batch, Map<Integer, Exception> failures,
      Set<String> failedKeys, Exception e) {
    for (Pending p : chunk.pending) {
      failures.put(p.index(), e);
      failedKeys.add(batch.get(p.index()).destination() + "\n" + batch.get(p.index()).key());
    }
  }

  /** Closes the SQS client this publisher built (not one the application gave it). */
  @Override
  public void close() {
    if (ownClient) {
      client.close();
    }
  }

  /** A message ready to send: its place in the batch, its queue and its SQS form. */
  private record Pending(int index, String queueUrl, SqsMessages.Encoded encoded) {}

  /** Messages for one request: one queue, at most ten, together no larger than one message may be. */
  private static final class Chunk {
    private final String queueUrl;
    private final List<Pending> pending = new ArrayList<>();
    private int size;

    Chunk(String queueUrl) {
      this.queueUrl = queueUrl;
    }

    boolean takes(Pending p, int maxMessageSize) {
      return p.queueUrl().equals(queueUrl) && pending.size() < MAX_BATCH_ENTRIES
          && size + p.encoded().size() <= maxMessageSize;
    }

    void add(Pending p) {
      pending.add(p);
      size += p.encoded().size();
    }
  }

  /** Builds an {@link SqsPublisher}; {@link #build()} checks the settings. */
  public static final class Builder {
    private SqsClient client;
    private ClientSettings clients = ClientSettings.DEFAULTS;
    private Duration sendTimeout = DEFAULT_SEND_TIMEOUT;
    private int maxMessageSize = DEFAULT_MAX_MESSAGE_SIZE;

    private Builder() {}

    /**
     * The application's own SQS client; the publisher does not close it. Without one, the
     * publisher builds its own from {@link #endpoint}, {@link #region} and {@link #credentials}.
     */
    public Builder client(SqsClient client) {
      this.client = Objects.requireNonNull(client, "client must not be null");
      return this;
    }

    /** Where SQS is, for an SQS-compatible server such as {@code http://localhost:9324}. Default: AWS's endpoint for the region. */
    public Builder endpoint(String endpoint) {
      this.clients = clients.withEndpoint(endpoint);
      return this;
    }

    /** The AWS region, such as {@code eu-west-1}. Default: the SDK's chain (AWS_REGION, profiles). */
    public Builder region(String region) {
      this.clients = clients.withRegion(region);
      return this;
    }

    /** Fixed credentials. Default: the SDK's chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, profiles, roles). */
    public Builder credentials(String accessKeyId, String secretAccessKey) {
      this.clients = clients.withCredentials(accessKeyId, secretAccessKey);
      return this;
    }

    /** Time one request may take, the SDK's own retries included. Default 10 s, at most 5 min. */
    public Builder sendTimeout(Duration sendTimeout) {
      this.sendTimeout = sendTimeout;
      return this;
    }

    /**
     * Largest message, body and attributes, in bytes: the queue's {@code MaximumMessageSize}.
     * Default {@value #DEFAULT_MAX_MESSAGE_SIZE}, at most {@value #MAX_MAX_MESSAGE_SIZE}.
     */
    public Builder maxMessageSize(int maxMessageSize) {
      this.maxMessageSize = maxMessageSize;
      return this;
    }

    /** Checks the settings and builds the publisher. */
    public SqsPublisher build() {
      SqsClientVersion.check(); // says so when the build picked an older SDK than txbox is tested with
      clients.check();
      if (sendTimeout == null || sendTimeout.compareTo(Duration.ofMillis(100)) < 0
          || sendTimeout.compareTo(MAX_SEND_TIMEOUT) > 0) {
        throw new IllegalArgumentException("sendTimeout must be >= 100ms and <= " + MAX_SEND_TIMEOUT + ", was "
            + sendTimeout);
      }
      if (maxMessageSize < 2 * ATTRIBUTE_ALLOWANCE || maxMessageSize > MAX_MAX_MESSAGE_SIZE) {
        throw new IllegalArgumentException("maxMessageSize must be >= " + 2 * ATTRIBUTE_ALLOWANCE + " and <= "
            + MAX_MAX_MESSAGE_SIZE + " (SQS's limit), was " + maxMessageSize);
      }
      return new SqsPublisher(this);
    }
  }
}
