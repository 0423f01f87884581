package io.txbox.sqs.internal;

import io.txbox.spi.support.ClientVersions;
import io.txbox.sqs.SqsPublisher;
import java.util.Optional;
import software.amazon.awssdk.core.util.VersionInfo;

/** Warns once when the AWS SDK on the class path is older than the one txbox-sqs is tested with. */
public final class SqsClientVersion {
  private SqsClientVersion() {}

  /** The warning given, when there was one. */
  public static Optional<String> check() {
    return ClientVersions.warnIfOlder("AWS SDK for Java", VersionInfo.SDK_VERSION, SqsPublisher.class, null);
  }
}
