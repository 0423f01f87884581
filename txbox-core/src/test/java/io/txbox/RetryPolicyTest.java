package io.txbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.spi.PermanentPublishException;
import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {
  private final RetryPolicy policy = RetryPolicy.builder()
      .initialDelay(Duration.ofMillis(100)).maxDelay(Duration.ofSeconds(1)).multiplier(2).maxAttempts(4).build();

  @Test
  void theDelayBoundGrowsExponentiallyUpToTheMaximum() {
    assertThat(policy.delayBound(1)).isEqualTo(Duration.ofMillis(100));
    assertThat(policy.delayBound(2)).isEqualTo(Duration.ofMillis(200));
    assertThat(policy.delayBound(4)).isEqualTo(Duration.ofMillis(800));
    assertThat(policy.delayBound(5)).isEqualTo(Duration.ofSeconds(1));
    assertThat(policy.delayBound(500)).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void fullJitterDrawsBetweenZeroAndTheBound() {
    SplittableRandom random = new SplittableRandom(42);
    long min = Long.MAX_VALUE;
    long max = 0;
    for (int i = 0; i < 10_000; i++) {
      long delay = policy.delayAfter(3, random).toMillis();
      min = Math.min(min, delay);
      max = Math.max(max, delay);
    }
    assertThat(min).isBetween(0L, 10L);
    assertThat(max).isBetween(390L, 400L);
  }

  @Test
  void permanentErrorsAreGivenUpAtOnceAndOthersAfterMaxAttempts() {
    Exception transientError = new IllegalStateException("broker busy");
    Exception wrapped = new RuntimeException(new PermanentPublishException("too large"));
    assertThat(policy.givesUp(wrapped, 1)).isTrue();
    assertThat(policy.givesUp(transientError, 3)).isFalse();
    assertThat(policy.givesUp(transientError, 4)).isTrue();
    RetryPolicy custom = RetryPolicy.builder().permanentWhen(e -> e instanceof IllegalStateException).build();
    assertThat(custom.isPermanent(transientError)).isTrue();
  }

  @Test
  void badSettingsAreRefusedWithTheRuleAndTheValue() {
    assertThatThrownBy(() -> RetryPolicy.builder().maxAttempts(0).build())
        .hasMessage("retry maxAttempts must be >= 1 and <= 1000000, was 0");
    assertThatThrownBy(() -> RetryPolicy.builder().initialDelay(Duration.ZERO).build())
        .hasMessage("retry initialDelay must be > 0, was PT0S");
    assertThatThrownBy(() -> RetryPolicy.builder().maxDelay(Duration.ofMillis(10)).build())
        .hasMessage("retry maxDelay must be >= initialDelay (PT0.1S), was PT0.01S");
    assertThatThrownBy(() -> RetryPolicy.builder().multiplier(0.5).build())
        .hasMessage("retry multiplier must be >= 1, was 0.5");
  }
}
