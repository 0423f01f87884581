package io.txbox.kafka.internal;

import io.txbox.kafka.KafkaPublisher;
import io.txbox.spi.support.ClientVersions;
import java.util.Optional;
import org.apache.kafka.common.utils.AppInfoParser;

/** Warns once when the kafka-clients on the class path is older than the one txbox-kafka is tested with (Spring Boot manages it as kafka.version). */
public final class KafkaClientVersion {
  private KafkaClientVersion() {}

  /** The warning given, when there was one. */
  public static Optional<String> check() {
    return ClientVersions.warnIfOlder("kafka-clients", AppInfoParser.getVersion(), KafkaPublisher.class, "kafka.version");
  }
}
