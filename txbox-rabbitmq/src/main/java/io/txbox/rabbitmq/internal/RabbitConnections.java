package io.txbox.rabbitmq.internal;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.net.URISyntaxException;
import java.security.GeneralSecurityException;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One RabbitMQ connection, opened on first use and opened again once it closed. The client's own
 * automatic recovery is off: a publisher or subscriber that finds its connection gone makes a new
 * one and knows that every unconfirmed message and unacknowledged delivery of the old one is void.
 */
public final class RabbitConnections implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(RabbitConnections.class);
  private final ConnectionFactory factory;
  private final String name;
  private Connection connection;

  public RabbitConnections(ConnectionFactory factory, String name) {
    this.factory = factory;
    this.name = name;
  }

  /** A factory for {@code uri}, with recovery off; a bad URI is an error that names the setting. */
  public static ConnectionFactory factory(String uri) {
    ConnectionFactory factory = new ConnectionFactory();
    if (uri == null || uri.isBlank()) {
      throw new IllegalArgumentException("uri must be set, such as amqp://guest:guest@localhost:5672");
    }
    try {
      factory.setUri(uri);
    } catch (URISyntaxException | GeneralSecurityException | IllegalArgumentException e) {
      throw new IllegalArgumentException("uri must be an amqp:// or amqps:// URI such as"
          + " amqp://user:password@host:5672/vhost, was '" + uri.replaceAll(":[^:@/]*@", ":***@") + "'", e);
    }
    factory.setAutomaticRecoveryEnabled(false);
    factory.setTopologyRecoveryEnabled(false);
    factory.setConnectionTimeout(5000);
    factory.setRequestedHeartbeat(10);
    return factory;
  }

  /** The open connection, connecting first if there is none. */
  public synchronized Connection get() throws IOException, TimeoutException {
    if (connection == null || !connection.isOpen()) {
      connection = factory.newConnection(name);
      connection.addShutdownListener(cause -> {
        if (!cause.isInitiatedByApplication()) {
          log.warn("RabbitMQ {}: connection lost: {}", name, cause.getMessage());
        }
      });
    }
    return connection;
  }

  @Override
  public synchronized void close() {
    if (connection != null) {
      try {
        connection.close(5000);
      } catch (IOException | RuntimeException e) {
        connection.abort();
      }
      connection = null;
    }
  }
}
