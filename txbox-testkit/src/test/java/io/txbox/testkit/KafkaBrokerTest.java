package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

/**
 * The testkit leaves the Kafka broker out of other brokers' tests (kafka_2.13 is an optional
 * dependency), so a test that must run it from its own class path, and lacks it, is told what to add;
 * the run's shared broker ({@code TXBOX_TEST_KAFKA}) is not a test's to stop.
 */
class KafkaBrokerTest {
  @Test
  void withoutTheBrokerOnTheTestClassPathItNamesTheDependencyToAdd() throws Exception {
    try (URLClassLoader withoutKafka = new URLClassLoader(new URL[0], ClassLoader.getPlatformClassLoader())) {
      assertThatThrownBy(() -> KafkaBroker.requireBroker(true, withoutKafka))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("org.apache.kafka:kafka_2.13").hasMessageContaining("test dependency");
    }
  }

  @Test
  void withTheBrokerOnTheTestClassPathOrTheBuildsListNothingIsMissing() {
    assertThatCode(() -> KafkaBroker.requireBroker(true, KafkaBroker.class.getClassLoader())).doesNotThrowAnyException();
    assertThatCode(() -> KafkaBroker.requireBroker(false, ClassLoader.getPlatformClassLoader()))
        .doesNotThrowAnyException();
  }

  @Test
  void theRunsSharedBrokerRefusesToStopNamingTheVariableAndIsLeftRunningOnClose() {
    KafkaBroker shared = KafkaBroker.running("127.0.0.1:19092");
    assertThatThrownBy(shared::stop).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("TXBOX_TEST_KAFKA").hasMessageContaining("KafkaBroker.start()");
    assertThatThrownBy(shared::restart).isInstanceOf(IllegalStateException.class);
    shared.close();
    assertThat(shared.isRunning()).isTrue();
    assertThat(shared.bootstrapServers()).isEqualTo("127.0.0.1:19092");
  }
}
