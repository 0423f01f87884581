package io.txbox.nats.internal;

import io.nats.client.Connection;
import io.nats.client.ConsumerContext;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.DeliverPolicy;
import io.nats.client.api.SequenceInfo;
import io.txbox.spi.support.DeliveryLoop;
import java.io.IOException;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A subscriber's durable pull consumer, and the rules for taking it over.
 *
 * <ul>
 *   <li><b>One subscriber at a time.</b> A durable that another subscriber is using (a pull request
 *       is waiting on it, or it has unacknowledged messages and was active within {@code
 *       AckWait}) is left alone: a second process started on it during a rolling deploy stands by
 *       and takes over once the first is gone, instead of deleting the durable under it or sharing
 *       its messages out of order.
 *   <li><b>Unacknowledged messages come again in order.</b> A free durable with unacknowledged
 *       messages (its subscriber crashed) is created again from its acknowledgement floor, so they
 *       come in stream order ahead of newer ones instead of after {@code AckWait}.
 *   <li><b>Never earlier than it was.</b> The new start is never before the start of the durable
 *       it replaces: a durable created again that has acknowledged nothing yet reports an ack
 *       floor of 0 (nats-server 2.9), which would replay the whole stream.
 *   <li><b>A lost delivery restarts it.</b> A delivery can be lost on its way to the subscriber (a
 *       fetch that ended on the client's clock before the server's messages arrived); the server
 *       would deliver it again only after {@code AckWait}, behind newer messages. The subscriber
 *       sees the gap in the consumer sequence and {@link #restart}s the durable from its
 *       acknowledgement floor, so the lost message comes again ahead of the ones after it.
 * </ul>
 */
public final class Durable {
  private static final Logger log = LoggerFactory.getLogger(Durable.class);
  /** JetStream's error code for a consumer that does not exist. */
  private static final int CONSUMER_NOT_FOUND = 10014;

  /** The durable's settings. */
  public record Settings(String stream, String name, List<String> subjects, Duration ackWait, int maxDeliver,
      int fetchSize) {}

  /**
   * The durable a subscriber is bound to.
   *
   * @param delivered the consumer sequence of its last delivery (0 when none yet): the next one
   *     delivered is {@code delivered + 1}, and anything else means deliveries were lost
   */
  public record Bound(ConsumerContext consumer, long delivered) {}

  /** How long the acknowledgements sent so far may take to reach the server before a restart. */
  private static final Duration ACK_FLUSH = Duration.ofSeconds(5);

  /** How often a subscriber standing by looks whether the durable is free. */
  private static final Duration STANDBY_CHECK = Duration.ofSeconds(1);

  private final Settings settings;
  private final String subscriber;
  private final NatsConnections connections;
  private final String servers;
  /**
   * The configuration of a durable this subscriber deleted to create it again, until it is
   * created: should that fail, the next try starts where this one would have, not at the stream's start.
   */
  private ConsumerConfiguration recreating;

  public Durable(Settings settings, String subscriber, NatsConnections connections, String servers) {
    this.settings = settings;
    this.subscriber = subscriber;
    this.connections = connections;
    this.servers = servers;
  }

  /**
   * Creates, updates or resets the durable and binds to it; empty, changing nothing, while
   * another subscriber is using it.
   *
   * @throws IllegalStateException when the server cannot be reached or refuses the consumer
   */
  public Optional<Bound> bindIfFree() {
    try {
      return bindIfFree(connections.get());
    } catch (IOException | JetStreamApiException e) {
      connections.close();
      throw new IllegalStateException("subscriber " + subscriber + ": cannot create durable consumer "
          + settings.name() + " on stream " + settings.stream() + " at " + servers + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while connecting to " + servers, e);
    }
  }

  /**
   * Stands by until the durable is free, looking every second, and binds to it; empty when
   * {@code loop} closes first.
   */
  public Optional<Bound> awaitFree(DeliveryLoop loop) {
    while (!loop.closedWithin(STANDBY_CHECK)) {
      try {
        Optional<Bound> bound = bindIfFree();
        if (bound.isPresent()) {
          log.info("subscriber {}: durable {} is free now; taking it over", subscriber, settings.name());
          return bound;
        }
      } catch (IllegalStateException e) {
        log.warn("subscriber {}: {}; trying again", subscriber, e.getMessage());
      }
    }
    return Optional.empty();
  }

  private Optional<Bound> bindIfFree(Connection connection)
      throws IOException, JetStreamApiException, InterruptedException {
    JetStreamManagement jsm = connection.jetStreamManagement();
    ConsumerInfo existing = existing(jsm);
    if (existing != null && inUse(existing)) {
      return Optional.empty();
    }
    return Optional.of(create(connection, jsm, config(jsm, existing)));
  }

  /**
   * Creates the durable again from its acknowledgement floor, once the acknowledgements sent so
   * far reached the server: every message not acknowledged comes again in stream order, those
   * acknowledged past the floor too (the inbox takes them as duplicates).
   *
   * @throws IllegalStateException when the server cannot be reached or refuses the consumer
   */
  public Bound restart() {
    try {
      Connection connection = connections.get();
      connection.flush(ACK_FLUSH);
      JetStreamManagement jsm = connection.jetStreamManagement();
      ConsumerInfo existing = existing(jsm);
      return create(connection, jsm, existing == null ? config(jsm, null) : restartConfig(jsm, existing));
    } catch (IOException | JetStreamApiException | TimeoutException e) {
      throw new IllegalStateException("subscriber " + subscriber + ": cannot create durable consumer "
          + settings.name() + " again on stream " + settings.stream() + " at " + servers + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while restarting durable " + settings.name(), e);
    }
  }

  private Bound create(Connection connection, JetStreamManagement jsm, ConsumerConfiguration config)
      throws IOException, JetStreamApiException {
    ConsumerInfo created = jsm.addOrUpdateConsumer(settings.stream(), config);
    recreating = null;
    return new Bound(connection.getConsumerContext(settings.stream(), settings.name()),
        created.getDelivered().getConsumerSequence());
  }

  /** Why a durable counts as in use, for the log. */
  public String inUseReason() {
    return "durable " + settings.name() + " of stream " + settings.stream() + " is in use by another subscriber"
        + " (a pull request is waiting, or it has unacknowledged messages and was active within AckWait "
        + settings.ackWait() + ")";
  }

  private boolean inUse(ConsumerInfo info) {
    if (info.getNumWaiting() > 0) {
      return true;
    }
    if (info.getNumAckPending() == 0) {
      return false;
    }
    ZonedDateTime now = info.getTimestamp() != null ? info.getTimestamp() : ZonedDateTime.now();
    ZonedDateTime since = now.minus(settings.ackWait());
    return activeSince(info.getDelivered(), since) || activeSince(info.getAckFloor(), since);
  }

  private static boolean activeSince(SequenceInfo sequence, ZonedDateTime since) {
    return sequence != null && sequence.getLastActive() != null && sequence.getLastActive().isAfter(since);
  }

  private ConsumerInfo existing(JetStreamManagement jsm) throws IOException, JetStreamApiException {
    try {
      return jsm.getConsumerInfo(settings.stream(), settings.name());
    } catch (JetStreamApiException e) {
      if (e.getApiErrorCode() == CONSUMER_NOT_FOUND) {
        return null;
      }
      throw e;
    }
  }

  private ConsumerConfiguration config(JetStreamManagement jsm, ConsumerInfo existing)
      throws IOException, JetStreamApiException {
    if (existing == null) {
      return recreating != null ? recreating : baseConfig().deliverPolicy(DeliverPolicy.All).build();
    }
    ConsumerConfiguration was = existing.getConsumerConfiguration();
    if (existing.getNumAckPending() == 0) { // deliver policy and start cannot change in place
      return baseConfig().deliverPolicy(was.getDeliverPolicy()).startSequence(was.getStartSequence()).build();
    }
    log.info("subscriber {}: {} messages of durable {} were never acknowledged; delivering again in order",
        subscriber, existing.getNumAckPending(), settings.name());
    return restartConfig(jsm, existing);
  }

  /** Deletes the durable and configures it anew from its acknowledgement floor, never earlier than it started. */
  private ConsumerConfiguration restartConfig(JetStreamManagement jsm, ConsumerInfo existing)
      throws IOException, JetStreamApiException {
    ConsumerConfiguration was = existing.getConsumerConfiguration();
    long from = existing.getAckFloor().getStreamSequence() + 1;
    if (was.getDeliverPolicy() == DeliverPolicy.ByStartSequence) {
      from = Math.max(from, was.getStartSequence());
    }
    log.info("subscriber {}: durable {} delivers again from stream sequence {}", subscriber, settings.name(), from);
    recreating = baseConfig().deliverPolicy(DeliverPolicy.ByStartSequence).startSequence(from).build();
    jsm.deleteConsumer(settings.stream(), settings.name());
    return recreating;
  }

  private ConsumerConfiguration.Builder baseConfig() {
    ConsumerConfiguration.Builder config = ConsumerConfiguration.builder()
        .durable(settings.name())
        .ackPolicy(AckPolicy.Explicit)
        .ackWait(settings.ackWait())
        .maxDeliver(settings.maxDeliver())
        .maxAckPending(Math.max(1000, 2L * settings.fetchSize()));
    if (!settings.subjects().isEmpty()) {
      config.filterSubjects(settings.subjects());
    }
    return config;
  }
}
