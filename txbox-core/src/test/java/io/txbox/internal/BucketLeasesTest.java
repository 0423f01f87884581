package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.RetryPolicy;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class BucketLeasesTest {
  private static int share(String instance, List<String> live, int buckets) {
    RelaySettings settings = new RelaySettings("s", instance, 100, Duration.ofMillis(1), Duration.ofSeconds(1),
        Duration.ofSeconds(2), Duration.ZERO, Duration.ofSeconds(1), RetryPolicy.defaults());
    return new BucketLeases(settings, null, null, new OwnedBuckets(System::nanoTime, 1), buckets, Clock.systemUTC(),
        System::nanoTime, () -> {}).fairShare(live);
  }

  @Test
  void everyBucketHasExactlyOneFairShareOwner() {
    List<String> live = List.of("a", "b", "c");
    assertThat(share("a", live, 64)).isEqualTo(22);
    assertThat(share("b", live, 64)).isEqualTo(21);
    assertThat(share("c", live, 64)).isEqualTo(21);
  }

  @Test
  void anInstanceNotYetSeenAsLiveTakesAShareAsIfFirst() {
    assertThat(share("z", List.of(), 64)).isEqualTo(64);
  }
}
