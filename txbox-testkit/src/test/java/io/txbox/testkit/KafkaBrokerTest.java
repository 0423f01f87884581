package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

/**
 * The testkit leaves the Kafka broker out of other brokers' tests (kafka_2.13 is an optional
 * dependency), so a test that must run it from its own class path, and lacks it, is told what to add.
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
}
