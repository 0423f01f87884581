package io.txbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.kafka.KafkaPublisher;
import io.txbox.spi.ClientVersions;
import org.apache.kafka.common.utils.AppInfoParser;
import org.junit.jupiter.api.Test;

class KafkaClientVersionTest {

  @Test
  void theBuildRecordsTheClientItTestsWithAndThatClientRaisesNoWarning() {
    assertThat(ClientVersions.tested(KafkaPublisher.class)).isEqualTo(AppInfoParser.getVersion());
    assertThat(KafkaClientVersion.check()).isEmpty();
  }
}
