package io.txbox.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class HttpServerConnectionCapTest {

  @Test
  void theConnectionCapLeavesHalfTheProcesssFilesToEverythingElse() {
    assertThat(HttpServer.connectionCap(1024, 1024)).as("ulimit -n 1024: no accept loop on EMFILE").isEqualTo(512);
    assertThat(HttpServer.connectionCap(1024, 1_048_576)).isEqualTo(1024);
    assertThat(HttpServer.connectionCap(1024, 2048)).isEqualTo(1024);
    assertThat(HttpServer.connectionCap(64, 20)).as("never below the smallest limit").isEqualTo(16);
    assertThat(HttpServer.connectionCap(1024, 0)).as("unknown on this JVM").isEqualTo(1024);
  }
}
