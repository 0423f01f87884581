package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The testkit's own tests run without ElasticMQ on their class path, as an SQS-less user's do. */
class ElasticMqServerTest {
  @Test
  void withoutElasticMqOnTheClassPathItNamesTheDependencyToAdd() {
    assertThatThrownBy(ElasticMqServer::start).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("org.elasticmq:elasticmq-server_2.13").hasMessageContaining("test dependency");
  }
}
