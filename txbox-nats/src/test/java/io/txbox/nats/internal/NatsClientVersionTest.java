package io.txbox.nats.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.nats.client.Nats;
import io.txbox.nats.NatsPublisher;
import io.txbox.spi.support.ClientVersions;
import org.junit.jupiter.api.Test;

class NatsClientVersionTest {

  @Test
  void theBuildRecordsTheClientItTestsWithAndThatClientRaisesNoWarning() {
    assertThat(ClientVersions.tested(NatsPublisher.class)).isEqualTo(Nats.CLIENT_VERSION);
    assertThat(NatsClientVersion.check()).isEmpty();
  }
}
