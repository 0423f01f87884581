package io.txbox.rabbitmq.internal;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.txbox.spi.support.Secrets;
import java.io.IOException;
import java.net.URI;
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
      requireHost(new URI(uri), uri);
      factory.setUri(uri);
    } catch (URISyntaxException | GeneralSecurityException | IllegalArgumentException e) {
      throw new IllegalArgumentException("uri must be an amqp:// or amqps:// URI such as"
          + " amqp://user:password@host:5672/vhost, was '" + shown(uri) + "'"
          + (e instanceof UnreadableHost ? ": " + e.getMessage() : ""), e);
    }
    factory.setAutomaticRecoveryEnabled(false);
    factory.setTopologyRecoveryEnabled(false);
    factory.setConnectionTimeout(5000);
    factory.setRequestedHeartbeat(10);
    return factory;
  }

  /** A URI whose authority Java could not read as host and port. */
  private static final class UnreadableHost extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    UnreadableHost(String message) {
      super(message);
    }
  }

  /**
   * The RabbitMQ client takes a URI whose authority {@link URI} cannot split into host and port
   * ({@code guest:p@ss@rabbit}, {@code rabbit:56x2}) as one without host and port, and connects to
   * localhost:5672 instead: refused here, saying what to change.
   */
  private static void requireHost(URI parsed, String uri) {
    if (parsed.getHost() != null || !parsed.isAbsolute()) {
      return; // a relative one is refused by the client itself
    }
    String authority = parsed.getRawAuthority();
    if (authority == null || authority.isEmpty()) {
      throw new UnreadableHost("it names no host");
    }
    if (authority.indexOf('@') != authority.lastIndexOf('@')) {
      throw new UnreadableHost("its user name or password holds '@': write each as %40");
    }
    throw new UnreadableHost("its host and port cannot be read: the port must be a number, and the user name"
        + " and password percent-encoded");
  }

  /** The URI with everything before the host's last {@code @} masked: a password may hold any character. */
  private static String shown(String uri) {
    return Secrets.maskUrl(uri);
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
