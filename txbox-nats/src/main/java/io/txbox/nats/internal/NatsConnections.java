package io.txbox.nats.internal;

import io.nats.client.Connection;
import io.nats.client.ConnectionListener;
import io.nats.client.ErrorListener;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.txbox.spi.support.Secrets;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One NATS connection, opened on first use and opened again once closed. It reconnects on its own
 * after a broken link. A publisher's connection never buffers messages meanwhile: a publish into
 * a broken link must fail at once rather than be sent later, behind messages sent after it. A
 * subscriber's does, so that an acknowledgement made during the outage still reaches the server.
 */
public final class NatsConnections implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(NatsConnections.class);
  private final String servers;
  private final String name;
  private final boolean bufferWhileReconnecting;
  private Connection connection;

  /** A publisher's connection, which fails at once while it reconnects. */
  public static NatsConnections forPublishing(String servers, String name) {
    return new NatsConnections(servers, name, false);
  }

  /** A subscriber's connection, which buffers acknowledgements while it reconnects. */
  public static NatsConnections forSubscribing(String servers, String name) {
    return new NatsConnections(servers, name, true);
  }

  private NatsConnections(String servers, String name, boolean bufferWhileReconnecting) {
    this.servers = servers;
    this.name = name;
    this.bufferWhileReconnecting = bufferWhileReconnecting;
  }

  /** Checks a comma-separated list of server URLs, naming the setting in the error. */
  public static void checkServers(String servers) {
    if (servers == null || servers.isBlank()) {
      throw new IllegalArgumentException("servers must be set, such as nats://localhost:4222");
    }
    for (String server : servers.split(",")) {
      try {
        URI uri = new URI(server.trim());
        if (uri.getHost() == null) {
          throw new URISyntaxException(server, "no host");
        }
      } catch (URISyntaxException e) {
        throw new IllegalArgumentException(
            "servers must be URLs such as nats://host:4222, and '" + server.trim() + "' is not one", e);
      }
    }
  }

  /** The open connection, connecting first if there is none. */
  public synchronized Connection get() throws IOException, InterruptedException {
    if (connection != null && connection.getStatus() == Connection.Status.CLOSED) {
      connection = null;
    }
    if (connection == null) {
      Options.Builder options = new Options.Builder()
          .servers(servers.split(","))
          .connectionName(name)
          .connectionTimeout(Duration.ofSeconds(5))
          .maxReconnects(-1)
          .reconnectWait(Duration.ofMillis(500))
          .connectionListener(this::logEvent)
          .errorListener(new LoggingErrorListener());
      if (!bufferWhileReconnecting) {
        options.reconnectBufferSize(0);
      }
      connection = Nats.connect(options.build());
    }
    return connection;
  }

  @Override
  public synchronized void close() {
    if (connection != null) {
      try {
        connection.close();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      connection = null;
    }
  }

  private void logEvent(Connection conn, ConnectionListener.Events event) {
    switch (event) {
      case DISCONNECTED -> log.warn("NATS {}: disconnected from {}, reconnecting", name, Secrets.mask(servers));
      case RECONNECTED -> log.info("NATS {}: reconnected to {}", name, Secrets.mask(conn.getConnectedUrl()));
      default -> log.debug("NATS {}: {}", name, event);
    }
  }

  /** Sends the client's complaints to the application's log; each failed reconnect only at debug. */
  private final class LoggingErrorListener implements ErrorListener {
    @Override
    public void errorOccurred(Connection conn, String error) {
      log.warn("NATS {}: {}", name, error);
    }

    @Override
    public void exceptionOccurred(Connection conn, Exception exp) {
      log.debug("NATS {}: {}", name, exp.toString());
    }
  }
}
