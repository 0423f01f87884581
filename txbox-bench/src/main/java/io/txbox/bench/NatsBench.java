package io.txbox.bench;

import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.Nats;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.txbox.Message;
import io.txbox.nats.NatsPublisher;
import io.txbox.nats.internal.NatsMessages;
import io.txbox.spi.Publisher;
import io.txbox.testkit.NatsServer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

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

  @Override
  public double bareRate(int messages) throws Exception {
    byte[] payload = new byte[300];
    return publishAll(messages, (js, i) -> js.publishAsync("bench-reference", payload));
  }

  @Override
  public double bareRateWithRelayHeaders(int messages) throws Exception {
    byte[] payload = new byte[300];
    return publishAll(messages, (js, i) -> {
      Message m = Events.orderPlaced("bench-reference", i);
      return js.publishAsync("bench-reference", NatsMessages.headers(m), payload,
          PublishOptions.builder().messageId(m.id().toString()).build());
    });
  }

  /** One way to publish message {@code i}. */
  @FunctionalInterface
  private interface Publish {
    CompletableFuture<PublishAck> send(JetStream js, int i) throws Exception;
  }

  /** Messages per second, each acknowledged, {@value #WINDOW} awaited at a time. */
  private double publishAll(int messages, Publish publish) throws Exception {
    try (Connection c = Nats.connect(nats.address())) {
      JetStream js = c.jetStream();
      long start = System.nanoTime();
      for (int sent = 0; sent < messages; sent += WINDOW) {
        List<CompletableFuture<PublishAck>> acks = new ArrayList<>(WINDOW);
        for (int i = sent; i < Math.min(messages, sent + WINDOW); i++) {
          acks.add(publish.send(js, i));
        }
        for (CompletableFuture<PublishAck> ack : acks) {
          ack.get(30, TimeUnit.SECONDS);
        }
      }
      return messages / ((System.nanoTime() - start) / 1e9);
    }
  }

  @Override
  public void close() {
    nats.close();
  }
}
