package io.txbox.demo;

import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.txbox.testkit.NatsServer;
import java.io.PrintStream;
import java.util.List;

/**
 * NATS JetStream: a file-backed stream with one subject, on the given server or on a
 * {@code nats-server} of the demo's own. One durable consumer keeps the order, so one inventory
 * process consumes; its threads handle different keys in parallel.
 */
final class NatsDemoBroker implements DemoBroker {
  private final NatsServer own;
  private final String servers;
  private final String subject;
  private final String stream;
  private final Connection connection;

  NatsDemoBroker(String servers, String run, PrintStream out) throws Exception {
    if (servers == null) {
      out.println("starting nats-server with JetStream (the machine's binary; --nats-servers to use yours)...");
      own = NatsServer.start();
      servers = own.address();
    } else {
      own = null;
    }
    this.servers = servers;
    this.subject = "orders-" + run;
    this.stream = "ORDERS_" + run;
    this.connection = Nats.connect(servers);
    connection.jetStreamManagement().addStream(StreamConfiguration.builder()
        .name(stream).subjects(subject).storageType(StorageType.File).build());
  }

  @Override
  public String name() {
    return "NATS";
  }

  @Override
  public String destination() {
    return subject;
  }

  @Override
  public List<String> relayArgs() {
    return List.of("--broker", "nats", "--nats-servers", servers);
  }

  @Override
  public List<String> inventoryArgs(String member) {
    return List.of("--broker", "nats", "--nats-servers", servers, "--stream", stream);
  }

  @Override
  public long held() {
    try {
      return connection.jetStreamManagement().getStreamInfo(stream).getStreamState().getMsgCount();
    } catch (Exception e) {
      throw new IllegalStateException("cannot read the stream's size: " + e, e);
    }
  }

  @Override
  public String heldLabel() {
    return "in NATS";
  }

  @Override
  public void close() throws Exception {
    try {
      connection.jetStreamManagement().deleteStream(stream);
    } finally {
      connection.close();
      if (own != null) {
        own.close();
      }
    }
  }
}
