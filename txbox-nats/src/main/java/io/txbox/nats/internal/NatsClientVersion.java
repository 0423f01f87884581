package io.txbox.nats.internal;

import io.nats.client.Nats;
import io.txbox.nats.NatsPublisher;
import io.txbox.spi.support.ClientVersions;
import java.util.Optional;

/** Warns once when the jnats on the class path is older than the one txbox-nats is tested with. */
public final class NatsClientVersion {
  private NatsClientVersion() {}

  /** The warning given, when there was one. */
  public static Optional<String> check() {
    return ClientVersions.warnIfOlder("jnats", Nats.CLIENT_VERSION, NatsPublisher.class, null);
  }
}
