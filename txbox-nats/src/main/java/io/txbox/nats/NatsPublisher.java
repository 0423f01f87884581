package io.txbox.nats;

import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import io.txbox.Message;
import io.txbox.nats.internal.NatsClientVersion;
import io.txbox.nats.internal.NatsConnections;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes relay batches to NATS JetStream. Each message goes to a subject (its destination,
 * unless a router says otherwise) with the header {@code Nats-Msg-Id} set to the message id, so
 * the stream's duplicate window drops what the relay sends again after a lost acknowledgement;
 * a message counts as delivered only when its {@code PubAck} arrived.
 *
 * <pre>{@code
 * NatsPublisher nats = NatsPublisher.builder()
 *     .servers("nats://nats-1:4222,nats://nats-2:4222")
 *     .subjectRouter(m -> "orders." + m.type())
 *     .build();
 * }</pre>
 *
 * <p>The first message of each subject in a batch is sent and acknowledged, then the rest follow
 * without waiting, and every acknowledgement is awaited (at most {@link Builder#ackTimeout} for the
 * batch). Order per key holds because one connection's messages are stored in the order sent;
 * because a server that refuses messages for now refuses the first; and because the connection
 * never buffers while it reconnects: a message sent into a broken connection fails at once, and so
 * do the later messages of its subject in the batch, so nothing overtakes a message sent again.
 *
 * <p>Headers: {@code Nats-Msg-Id}, {@code txbox} (type, version, key, content type and creation
 * time, packed: see {@link NatsMessages}), then the message's own headers. A subject that no
 * stream stores, or a message larger than the server's {@code max_payload}, is a {@link
 * PermanentPublishException} and is dead-lettered at once.
 *
 * <p>Set the stream's {@code duplicate_window} (JetStream's default is 2 minutes) longer than the
 * relay may need to send a message again; past it, a resend is stored twice and the consumer's
 * inbox absorbs the second copy.
 */
public final class NatsPublisher implements Publisher {
  private static final Logger log = LoggerFactory.getLogger(NatsPublisher.class);
  /** Default time to wait for the acknowledgements of a batch. */
  public static final Duration DEFAULT_ACK_TIMEOUT = Duration.ofSeconds(10);
  /** Longest accepted {@link Builder#ackTimeout}. */
  public static final Duration MAX_ACK_TIMEOUT = Duration.ofMinutes(5);

  private final NatsConnections connections;
  private final Function<Message, String> subjectRouter;
  private final SendScope sendScope;
  private final Duration ackTimeout;
  private final NatsMessages.Format format;
  private final Set<String> storedSubjects = new HashSet<>();

  private NatsPublisher(Builder b) {
    this.connections = NatsConnections.forPublishing(b.servers, "txbox-relay");
    this.subjectRouter = b.subjectRouter;
    this.sendScope = b.sendScope;
    this.ackTimeout = b.ackTimeout;
    this.format = b.format;
  }

  /** A builder with the defaults above. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public synchronized PublishResult publish(List<Message> batch) {
    Connection connection;
    try {
      connection = connections.get();
    } catch (IOException e) {
      return PublishResult.allFailed(batch.size(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return PublishResult.allFailed(batch.size(), e);
    }
    Sending sending;
    try {
      sending = new Sending(connection, batch);
    } catch (IllegalStateException e) {
      return PublishResult.allFailed(batch.size(), e);
    }
    sending.firstOfEachSubject();
    sending.awaitAcks();
    sending.theRest();
    sending.awaitAcks();
    sending.warnAboutOvertaking();
    return PublishResult.of(batch.size(), sending.failures);
  }

  /**
   * One batch on its way. The first message of each subject is sent and acknowledged before the
   * rest of that subject follows, pipelined: a server that refuses messages for now (JetStream
   * still recovering its streams after a restart) refuses the first, and no later message of its
   * subject is stored ahead of it. A subject that failed once is not sent to again in the batch.
   */
  private final class Sending {
    private final Connection connection;
    private final JetStream js;
    private final List<Message> batch;
    private final String[] subjects;
    private final List<CompletableFuture<PublishAck>> acks;
    private final Map<Integer, Exception> failures = new HashMap<>();
    private final Map<String, Exception> subjectFailures = new HashMap<>();
    private final Set<Integer> firsts = new HashSet<>();
    private final long deadline = System.nanoTime() + ackTimeout.toNanos();

    Sending(Connection connection, List<Message> batch) {
      this.connection = connection;
      this.js = jetStream(connection);
      this.batch = batch;
      this.subjects = new String[batch.size()];
      this.acks = new ArrayList<>(Collections.nCopies(batch.size(), null));
    }

    /** The first message of each subject that can be sent; one dead-lettered at once does not count. */
    void firstOfEachSubject() {
      Set<String> checked = new HashSet<>();
      Set<String> probed = new HashSet<>();
      for (int i = 0; i < batch.size(); i++) {
        subjects[i] = subjectRouter.apply(batch.get(i));
        if (checked.add(subjects[i])) { // once per subject and batch, whatever the server answered
          Exception missing = checkStored(connection, subjects[i]);
          if (missing != null) {
            subjectFailures.put(subjects[i], missing);
          }
        }
        if (!probed.contains(subjects[i])) {
          firsts.add(i);
          send(i);
          if (acks.get(i) != null || subjectFailures.containsKey(subjects[i])) {
            probed.add(subjects[i]);
          }
        }
      }
    }

    void theRest() {
      for (int i = 0; i < batch.size(); i++) {
        if (!firsts.contains(i)) {
          send(i);
        }
      }
    }

    private void send(int i) {
      Exception failed = subjectFailures.get(subjects[i]);
      if (failed != null) {
        failures.put(i, failed);
        return;
      }
      Message m = batch.get(i);
      try (SendScope.Entered ignored = sendScope.enter(m)) {
        acks.set(i, js.publishAsync(subjects[i], checkedHeaders(connection, m), m.payload(),
            PublishOptions.builder().messageId(m.id().toString()).build()));
      } catch (PermanentPublishException e) {
        failures.put(i, e); // this message is dead-lettered; the ones after it go on
      } catch (RuntimeException e) { // a broken connection: later messages must not overtake this one
        failures.put(i, e);
        subjectFailures.put(subjects[i], e);
      }
    }

    /** Collects every outstanding acknowledgement, within the batch's {@code ackTimeout}. */
    void awaitAcks() {
      for (int i = 0; i < acks.size(); i++) {
        CompletableFuture<PublishAck> ack = acks.get(i);
        if (ack == null) {
          continue;
        }
        acks.set(i, null);
        Exception failed = outcome(ack);
        if (failed != null) {
          failures.put(i, failed);
          if (!(failed instanceof PermanentPublishException)) {
            subjectFailures.putIfAbsent(subjects[i], failed);
          }
        }
      }
    }

    private Exception outcome(CompletableFuture<PublishAck> ack) {
      try {
        ack.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        return null;
      } catch (TimeoutException e) {
        ack.cancel(false);
        return new TimeoutException("no PubAck from NATS within " + ackTimeout);
      } catch (ExecutionException e) {
        return classify(e.getCause());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return e;
      }
    }

    /**
     * A message that failed for now while a later one of its subject was stored means the stream
     * holds them out of order (the server refused one and took the next); the relay sends the
     * failed one again, after. Rare, and worth a warning, since consumers will see it.
     */
    void warnAboutOvertaking() {
      Map<String, Integer> firstFailure = new HashMap<>();
      Set<String> warned = new HashSet<>();
      for (int i = 0; i < batch.size(); i++) {
        Exception failed = failures.get(i);
        Integer earlier = firstFailure.get(subjects[i]);
        if (failed != null) {
          if (!(failed instanceof PermanentPublishException)) {
            firstFailure.putIfAbsent(subjects[i], i);
          }
        } else if (earlier != null && warned.add(subjects[i])) {
          log.warn("message {} on subject {} was stored before message {}, which failed ({}); consumers see"
              + " them out of order", batch.get(i).id(), subjects[i], batch.get(earlier).id(), failures.get(earlier));
        }
      }
    }
  }

  private JetStream jetStream(Connection connection) {
    try {
      return connection.jetStream();
    } catch (IOException e) {
      throw new IllegalStateException("cannot use JetStream on " + connection.getConnectedUrl(), e);
    }
  }

  /** {@code null} when a stream stores {@code subject} or the server cannot say; else the error. */
  private Exception checkStored(Connection connection, String subject) {
    if (storedSubjects.contains(subject)) {
      return null;
    }
    try {
      JetStreamManagement jsm = connection.jetStreamManagement();
      if (jsm.getStreamNames(subject).isEmpty()) {
        return new PermanentPublishException("no JetStream stream stores subject " + subject
            + ": add a stream for it (nats stream add --subjects '" + subject + "'), or route the destination elsewhere");
      }
      storedSubjects.add(subject);
      return null;
    } catch (IOException | JetStreamApiException | RuntimeException e) {
      return null; // the publish itself will tell, transiently
    }
  }

  private Headers checkedHeaders(Connection connection, Message m) throws PermanentPublishException {
    Headers headers = NatsMessages.headers(m, format);
    long size = (long) m.payloadSize() + headers.serializedLength();
    long limit = connection.getMaxPayload();
    if (size > limit) {
      throw new PermanentPublishException("message " + m.id() + " is " + size + " bytes with its headers,"
          + " over the server's max_payload of " + limit + ": raise max_payload or send a reference to the data");
    }
    return headers;
  }

  /** JetStream's "message size exceeds maximum allowed" cannot succeed on a retry. */
  private Exception classify(Throwable cause) {
    if (cause instanceof JetStreamApiException api && api.getApiErrorCode() == 10054) {
      return new PermanentPublishException("the stream refused the message: " + api.getMessage(), api);
    }
    if (cause instanceof JetStreamApiException) {
      storedSubjects.clear(); // a stream may have gone; ask again next batch
    }
    return cause instanceof Exception e ? e : new ExecutionException(cause);
  }

  @Override
  public synchronized void close() {
    connections.close();
  }

  /** Builds a {@link NatsPublisher}; {@link #build()} checks the settings. */
  public static final class Builder {
    private String servers;
    private Function<Message, String> subjectRouter = Message::destination;
    private SendScope sendScope = SendScope.NONE;
    private Duration ackTimeout = DEFAULT_ACK_TIMEOUT;
    private NatsMessages.Format format = NatsMessages.Format.PACKED;

    private Builder() {}

    /** Server URLs, comma-separated, such as {@code nats://localhost:4222}. Required. */
    public Builder servers(String servers) {
      this.servers = servers;
      return this;
    }

    /** Maps a message to its subject. Default: the message's destination. */
    public Builder subjectRouter(Function<Message, String> subjectRouter) {
      this.subjectRouter = Objects.requireNonNull(subjectRouter, "subjectRouter must not be null");
      return this;
    }

    /**
     * How long a batch waits for its acknowledgements; the unanswered ones fail and are sent again.
     * Default 10 s, at most 5 min.
     */
    public Builder ackTimeout(Duration ackTimeout) {
      this.ackTimeout = ackTimeout;
      return this;
    }

    /**
     * How txbox's metadata travels: {@link NatsMessages.Format#PACKED} in one header (the
     * default), or {@link NatsMessages.Format#SEPARATE_HEADERS} as txbox 0.1 wrote it, while
     * consumers that read those headers are not upgraded yet. txbox's subscribers read both.
     */
    public Builder format(NatsMessages.Format format) {
      this.format = Objects.requireNonNull(format, "format must not be null");
      return this;
    }

    /**
     * Entered around handing each message to the NATS client, for tracing instrumentation of the
     * client to join the message's trace. Default none.
     */
    public Builder sendScope(SendScope sendScope) {
      this.sendScope = Objects.requireNonNull(sendScope, "sendScope must not be null");
      return this;
    }

    /** Checks the settings and builds the publisher; it connects on first use. */
    public NatsPublisher build() {
      NatsClientVersion.check(); // says so when the build picked an older client than txbox is tested with
      NatsConnections.checkServers(servers);
      if (ackTimeout == null || ackTimeout.compareTo(Duration.ofMillis(1)) < 0 || ackTimeout.compareTo(MAX_ACK_TIMEOUT) > 0) {
        throw new IllegalArgumentException("ackTimeout must be >= 1 ms and <= " + MAX_ACK_TIMEOUT + ", was " + ackTimeout);
      }
      return new NatsPublisher(this);
    }
  }
}
