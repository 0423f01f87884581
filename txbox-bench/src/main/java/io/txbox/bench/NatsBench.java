package io.txbox.bench;

import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.Nats;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import io.txbox.Message;
import io.txbox.nats.NatsPublisher;
import io.txbox.nats.NatsMessages;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.Publisher;
import io.txbox.testkit.NatsServer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * A NATS server of its own with a file-backed stream, and jnats publishing asynchronously (5000
 * awaited at a time, as the relay's batch) as the reference.
 */
final class NatsBench implements BenchBroker {
  private static final int WINDOW = 5000;
  private final NatsServer nats = NatsServer.start();

  NatsBench() throws Exception {
    try (Connection c = Nats.connect(nats.address())) {
      c.jetStreamManagement().addStream(StreamConfiguration.builder().name("BENCH")
          .subjects(RELAY_DESTINATION, "bench-reference").storageType(StorageType.File).build());
    }
  }

  @Override
  public String reference() {
    return "jnats publishAsync to a file stream, PubAck awaited, 300 B, " + WINDOW + " in flight, no headers";
  }

  @Override
  public Publisher publisher() {
    return NatsPublisher.builder().servers(nats.address()).build();
  }

  /** txbox 0.1's separate headers instead of the packed one. */
  @Override
  @SuppressWarnings("deprecation")
  public Publisher publisherInFormerWireFormat() {
    return NatsPublisher.builder().servers(nats.address()).format(NatsMessages.Format.SEPARATE_HEADERS).build();
  }

  @Override
  public double bareRate(int messages) throws Exception {
    return publishAll(messages, i -> new Prepared(null, null));
  }

  @Override
  public double bareRateWithRelayHeaders(int messages) throws Exception {
    return publishAll(messages, i -> {
      Message m = Events.orderPlaced("bench-reference", i);
      try {
        return new Prepared(NatsMessages.headers(m), PublishOptions.builder().messageId(m.id().toString()).build());
      } catch (PermanentPublishException e) {
        throw new IllegalStateException(e);
      }
    });
  }

  /** What one message is sent with; {@code null}s for a plain message. */
  private record Prepared(Headers headers, PublishOptions options) {}

  /**
   * Messages per second, each acknowledged, {@value #WINDOW} awaited at a time. Only sending and
   * awaiting are timed; the messages of a window are prepared before its clock starts.
   */
  private double publishAll(int messages, IntFunction<Prepared> prepare) throws Exception {
    byte[] payload = new byte[300];
    try (Connection c = Nats.connect(nats.address())) {
      JetStream js = c.jetStream();
      long timed = 0;
      for (int sent = 0; sent < messages; sent += WINDOW) {
        List<Prepared> window = new ArrayList<>(WINDOW);
        for (int i = sent; i < Math.min(messages, sent + WINDOW); i++) {
          window.add(prepare.apply(i));
        }
        long start = System.nanoTime();
        List<CompletableFuture<PublishAck>> acks = new ArrayList<>(WINDOW);
        for (Prepared p : window) {
          acks.add(p.options() == null ? js.publishAsync("bench-reference", payload)
              : js.publishAsync("bench-reference", p.headers(), payload, p.options()));
        }
        for (CompletableFuture<PublishAck> ack : acks) {
          ack.get(30, TimeUnit.SECONDS);
        }
        timed += System.nanoTime() - start;
      }
      return messages / (timed / 1e9);
    }
  }

  @Override
  public void close() {
    nats.close();
  }
}
