package io.txbox.rabbitmq.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.impl.ClientVersion;
import io.txbox.rabbitmq.RabbitPublisher;
import io.txbox.spi.support.ClientVersions;
import org.junit.jupiter.api.Test;

class RabbitClientVersionTest {

  @Test
  void theBuildRecordsTheClientItTestsWithAndThatClientRaisesNoWarning() {
    assertThat(ClientVersions.alsoTested(RabbitPublisher.class)).as("Spring Boot 3.5's and 4's").hasSize(2)
        .allMatch(version -> version.matches("\\d+\\.\\d+\\.\\d+"));
    assertThat(ClientVersions.tested(RabbitPublisher.class)).isEqualTo(ClientVersion.VERSION);
    assertThat(RabbitClientVersion.check()).isEmpty();
  }
}
