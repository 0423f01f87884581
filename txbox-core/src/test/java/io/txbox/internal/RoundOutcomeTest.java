package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.Message;
import io.txbox.RetryPolicy;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.StoredMessage;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RoundOutcomeTest {
  private static final Instant NOW = Instant.parse("2026-11-22T12:00:00Z");
  private final RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).build();
  private final RoundOutcome outcome = new RoundOutcome("s", policy, new SplittableRandom(1), new HashMap<>());
  private final BucketState bucket = new BucketState(5, new Checkpoint(10, 100), 0, null);

  private static List<RoundOutcome.Sent> sent(int count) {
    List<RoundOutcome.Sent> sent = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      Message m = Message.builder().type("T").destination("d").payload(new byte[0]).build();
      sent.add(new RoundOutcome.Sent(new StoredMessage(5, new Checkpoint(11, 101 + i), m), i));
    }
    return sent;
  }

  @Test
  void theCheckpointMovesOverEveryAcknowledgedEvent() {
    outcome.settle(bucket, sent(3), PublishResult.allAcknowledged(3), null, NOW);
    assertThat(outcome.progress).containsExactly(new BucketProgress(5, new Checkpoint(11, 103), 0, null, null));
    assertThat(outcome.acknowledged).hasSize(3);
  }

  @Test
  void theCheckpointStopsBeforeTheFirstEventToRetryEvenWhenLaterOnesWereAcknowledged() {
    PublishResult result = PublishResult.of(3, Map.of(1, new IllegalStateException("timeout")));
    outcome.settle(bucket, sent(3), result, null, NOW);
    BucketProgress p = outcome.progress.get(0);
    assertThat(p.checkpoint()).isEqualTo(new Checkpoint(11, 101));
    assertThat(p.attempts()).isEqualTo(1);
    assertThat(p.nextAttemptAt()).isAfterOrEqualTo(NOW).isBefore(NOW.plus(Duration.ofMillis(101)));
    assertThat(p.lastError()).contains("timeout");
    assertThat(outcome.deadLetters).isEmpty();
  }

  @Test
  void aPermanentFailureIsDeadLetteredAndTheBucketMovesOn() {
    PublishResult result = PublishResult.of(3, Map.of(1, new PermanentPublishException("too large")));
    outcome.settle(bucket, sent(3), result, null, NOW);
    assertThat(outcome.deadLetters).singleElement()
        .satisfies(d -> assertThat(d.position()).isEqualTo(new Checkpoint(11, 102)));
    assertThat(outcome.progress).containsExactly(new BucketProgress(5, new Checkpoint(11, 103), 0, null, null));
  }

  @Test
  void theLastAllowedAttemptDeadLetters() {
    BucketState tiredBucket = new BucketState(5, new Checkpoint(10, 100), 2, null);
    PublishResult result = PublishResult.of(2, Map.of(0, new IllegalStateException("nope")));
    outcome.settle(tiredBucket, sent(2), result, null, NOW);
    assertThat(outcome.deadLetters).singleElement().satisfies(d -> assertThat(d.attempts()).isEqualTo(3));
    assertThat(outcome.progress.get(0).checkpoint()).isEqualTo(new Checkpoint(11, 102));
  }

  @Test
  void anOutageDoesNotCountAsAnAttempt() {
    BucketState tiredBucket = new BucketState(5, new Checkpoint(10, 100), 2, null);
    outcome.settle(tiredBucket, sent(2), PublishResult.allFailed(2, new IllegalStateException("down")), null, NOW);
    assertThat(outcome.deadLetters).isEmpty();
    assertThat(outcome.progress.get(0).attempts()).isEqualTo(2);
    assertThat(outcome.progress.get(0).checkpoint()).isEqualTo(new Checkpoint(10, 100));
  }

  @Test
  void aDelayedEventHoldsTheBucketUntilItIsDue() {
    Instant due = NOW.plusSeconds(30);
    outcome.settle(bucket, sent(1), PublishResult.allAcknowledged(1), due, NOW);
    assertThat(outcome.progress).containsExactly(new BucketProgress(5, new Checkpoint(11, 101), 0, due, null));
  }
}
