package io.txbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;

class ClientPropertiesTest {

  @Test
  void aMisspeltNameIsRefusedWithTheClosestProperty() {
    assertThatThrownBy(() -> ClientProperties.check("producer", ProducerConfig.configDef(), Map.of("lnger.ms", "5")))
        .isInstanceOf(ClientProperties.Refused.class)
        .hasMessage("unknown producer property 'lnger.ms': did you mean 'linger.ms'?");
    assertThatThrownBy(() -> ClientProperties.check("consumer", ConsumerConfig.configDef(),
        Map.of("group.instance.di", "inventory-1")))
        .hasMessage("unknown consumer property 'group.instance.di': did you mean 'group.instance.id'?");
  }

  @Test
  void aNameLikeNoPropertyIsRefusedPointingAtTheClientsList() {
    assertThatThrownBy(() -> ClientProperties.check("consumer", ConsumerConfig.configDef(), Map.of("colour", "blue")))
        .hasMessage("unknown consumer property 'colour': the Kafka consumer has no such property"
            + " (its properties: https://kafka.apache.org/documentation/#consumerconfigs)");
  }

  @Test
  void aPluginsOwnSettingIsPassedOnButATypoBesideItIsNot() {
    Map<String, String> withInterceptor = new LinkedHashMap<>();
    withInterceptor.put("interceptor.classes", "com.example.AuditInterceptor");
    withInterceptor.put("audit.endpoint", "https://audit.example");
    assertThatCode(() -> ClientProperties.check("producer", ProducerConfig.configDef(), withInterceptor))
        .doesNotThrowAnyException();
    withInterceptor.put("lnger.ms", "5");
    assertThatThrownBy(() -> ClientProperties.check("producer", ProducerConfig.configDef(), withInterceptor))
        .hasMessageContaining("did you mean 'linger.ms'?");
  }

  @Test
  void aBadValueIsRefusedWithTheClientsOwnReason() {
    assertThatThrownBy(() -> ClientProperties.check("producer", ProducerConfig.configDef(), Map.of("linger.ms", "abc")))
        .hasMessage("producer property linger.ms: Invalid value abc for configuration linger.ms:"
            + " Not a number of type LONG");
    assertThatThrownBy(() -> ClientProperties.check("producer", ProducerConfig.configDef(),
        Map.of("compression.type", "zip")))
        .hasMessageStartingWith("producer property compression.type: Invalid value zip for configuration"
            + " compression.type: String must be one of");
    assertThatThrownBy(() -> ClientProperties.check("consumer", ConsumerConfig.configDef(),
        Map.of("max.poll.records", "0")))
        .hasMessageContaining("max.poll.records").hasMessageContaining("Value must be at least 1");
  }

  @Test
  void goodPropertiesPass() {
    Map<String, String> good = Map.of("linger.ms", "20", "compression.type", "lz4",
        "ssl.enabled.protocols", "TLSv1.2,TLSv1.3", "sasl.jaas.config", "x required password=\"p\";");
    assertThatCode(() -> ClientProperties.check("producer", ProducerConfig.configDef(), good))
        .doesNotThrowAnyException();
  }

  @Test
  void controlCharactersAndHugeNamesAreNotEchoed() {
    String name = "bad\u001b[31mname" + "x".repeat(10_000);
    assertThatThrownBy(() -> ClientProperties.check("producer", ProducerConfig.configDef(), Map.of(name, "1")))
        .hasMessageNotContaining("\u001b").hasMessageContaining("bad?[31mname")
        .satisfies(e -> org.assertj.core.api.Assertions.assertThat(e.getMessage().length()).isLessThan(400));
  }
}
