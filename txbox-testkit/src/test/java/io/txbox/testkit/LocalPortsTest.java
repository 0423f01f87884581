package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.ServerSocket;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class LocalPortsTest {
  @Test
  void portsTakenTogetherAreDifferentAndEachCanBeListenedOn() throws Exception {
    for (int i = 0; i < 200; i++) {
      int[] ports = LocalPorts.free(3);
      assertThat(Arrays.stream(ports).distinct().count()).as(Arrays.toString(ports)).isEqualTo(3);
      try (ServerSocket a = new ServerSocket(ports[0]); ServerSocket b = new ServerSocket(ports[1]);
          ServerSocket c = new ServerSocket(ports[2])) {
        assertThat(a.isBound() && b.isBound() && c.isBound()).isTrue();
      }
    }
  }
}
