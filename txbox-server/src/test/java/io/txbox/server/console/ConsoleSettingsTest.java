package io.txbox.server.console;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The console's settings refuse what they cannot take when built, naming the option and its range. */
class ConsoleSettingsTest {
  private static final InetSocketAddress LOOPBACK = new InetSocketAddress("127.0.0.1", 0);

  @Test
  void aRequestTimeoutOutsideOneToSixtySecondsIsRefusedNamingTheOption() {
    for (Duration timeout : List.of(Duration.ofMillis(500), Duration.ofSeconds(61))) {
      assertThatThrownBy(() -> settings(32, timeout))
          .hasMessageStartingWith("invalid --request-timeout (TXBOX_REQUEST_TIMEOUT): must be between 1s and 60s, was ");
    }
  }

  @Test
  void threadsOutsideFourTo256AreRefusedNamingTheOption() {
    assertThatThrownBy(() -> settings(3, Duration.ofSeconds(5)))
        .hasMessage("invalid --threads (TXBOX_THREADS): must be between 4 and 256, was 3");
  }

  private static Console.Settings settings(int threads, Duration requestTimeout) {
    return new Console.Settings(LOOPBACK, null, Duration.ofHours(1), Set.of(), threads, List.of(), requestTimeout);
  }
}
