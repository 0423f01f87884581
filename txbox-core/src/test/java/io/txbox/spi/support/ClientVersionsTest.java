package io.txbox.spi.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ClientVersionsTest {

  @Test
  void anOlderMinorOrMajorVersionIsWarnedAboutWithTheSettingThatFixesIt() {
    assertThat(ClientVersions.olderWarning("kafka-clients", "3.8.1", "4.1.1", List.of("3.9.2"), "kafka.version")).hasValueSatisfying(w ->
        assertThat(w).contains("kafka-clients 3.8.1 is on the class path, older than the 4.1.1")
            .contains("io.txbox:txbox-bom").contains("setting the Maven property kafka.version to 4.1.1"));
    assertThat(ClientVersions.olderWarning("amqp-client", "5.24.0", "5.37.1", List.of("5.25.0"), "rabbit-amqp-client.version")).isPresent();
    assertThat(ClientVersions.olderWarning("jnats", "2.20.0", "2.26.2", List.of(), null)).hasValueSatisfying(w ->
        assertThat(w).doesNotContain("spring-boot-starter-parent"));
  }

  @Test
  void theSameNewerOrPatchLevelDifferentVersionIsNotWarnedAbout() {
    assertThat(ClientVersions.olderWarning("kafka-clients", "4.1.0", "4.1.1", List.of(), "kafka.version")).isEmpty();
    assertThat(ClientVersions.olderWarning("kafka-clients", "4.2.0", "4.1.1", List.of(), "kafka.version")).isEmpty();
    assertThat(ClientVersions.olderWarning("kafka-clients", "5.0.0-rc1", "4.1.1", List.of(), "kafka.version")).isEmpty();
    assertThat(ClientVersions.olderWarning("kafka-clients", "unknown", "unknown", List.of(), "kafka.version")).isEmpty();
  }

  @Test
  void aVersionTheStarterIsAlsoTestedWithIsNotWarnedAbout() {
    assertThat(ClientVersions.olderWarning("kafka-clients", "3.9.2", "4.1.1", List.of("3.9.2", "4.1.2"), "kafka.version"))
        .as("Spring Boot 3.5's").isEmpty();
    assertThat(ClientVersions.olderWarning("kafka-clients", "3.9.0", "4.1.1", List.of("3.9.2"), "kafka.version"))
        .as("the same line").isEmpty();
  }

  @Test
  void slf4jOneWithoutABindingIsTheOnlyCaseWhereLogsGoNowhere() {
    assertThat(ClientVersions.loggingWarning(false, false)).hasValueSatisfying(w ->
        assertThat(w).contains("slf4j-api 1.x").contains("org.slf4j:slf4j-api 2.0.x"));
    assertThat(ClientVersions.loggingWarning(false, true)).as("1.x with its binding logs").isEmpty();
    assertThat(ClientVersions.loggingWarning(true, false)).as("2.x").isEmpty();
  }
}
