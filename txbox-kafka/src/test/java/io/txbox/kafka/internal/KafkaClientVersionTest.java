package io.txbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.kafka.KafkaPublisher;
import io.txbox.spi.support.ClientVersions;
import org.apache.kafka.common.utils.AppInfoParser;
import org.junit.jupiter.api.Test;

class KafkaClientVersionTest {

  @Test
  void theBuildRecordsTheClientItTestsWithAndThatClientRaisesNoWarning() {
    assertThat(ClientVersions.alsoTested(KafkaPublisher.class)).as("Spring Boot 3.5's and 4's").hasSize(2)
        .allMatch(version -> version.matches("\\d+\\.\\d+\\.\\d+"));
    assertThat(ClientVersions.tested(KafkaPublisher.class)).isEqualTo(AppInfoParser.getVersion());
    assertThat(KafkaClientVersion.check()).isEmpty();
  }
}
