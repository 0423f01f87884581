package io.txbox.sqs.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.spi.support.ClientVersions;
import io.txbox.sqs.SqsPublisher;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.util.VersionInfo;

class SqsClientVersionTest {

  @Test
  void theBuildRecordsTheSdkItTestsWithAndThatSdkRaisesNoWarning() {
    assertThat(ClientVersions.tested(SqsPublisher.class)).isEqualTo(VersionInfo.SDK_VERSION);
    assertThat(SqsClientVersion.check()).isEmpty();
  }
}
