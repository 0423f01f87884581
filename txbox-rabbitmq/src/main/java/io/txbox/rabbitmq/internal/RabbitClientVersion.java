package io.txbox.rabbitmq.internal;

import com.rabbitmq.client.impl.ClientVersion;
import io.txbox.rabbitmq.RabbitPublisher;
import io.txbox.spi.support.ClientVersions;
import java.util.Optional;

/** Warns once when the amqp-client on the class path is older than the one txbox-rabbitmq is tested with (Spring Boot manages it as rabbit-amqp-client.version). */
public final class RabbitClientVersion {
  private RabbitClientVersion() {}

  /** The warning given, when there was one. */
  public static Optional<String> check() {
    return ClientVersions.warnIfOlder("amqp-client", ClientVersion.VERSION, RabbitPublisher.class, "rabbit-amqp-client.version");
  }
}
