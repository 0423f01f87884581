package io.txbox.spi.support;

import static io.txbox.spi.support.SettleRule.Fate.ACKNOWLEDGED;
import static io.txbox.spi.support.SettleRule.Fate.DEAD_LETTERED;
import static io.txbox.spi.support.SettleRule.Fate.HELD_BACK;
import static io.txbox.spi.support.SettleRule.Fate.RETRY;
import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.RetryPolicy;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.support.SettleRule.Fate;
import io.txbox.spi.support.SettleRule.Outcome;
import io.txbox.spi.support.SettleRule.Sent;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class SettleRuleTest {
  private final SettleRule rule = new SettleRule(RetryPolicy.builder().maxAttempts(3)
      .initialDelay(Duration.ofSeconds(1)).maxDelay(Duration.ofSeconds(8)).build());
  private final Random random = new Random(7);
  private final Exception refused = new IllegalStateException("broker refused it");

  @Test
  void aRetriedEventHoldsBackTheLaterEventsOfItsGroupOnly() {
    List<Sent> sent = List.of(
        Sent.sent("a", 0, 0, 0),
        Sent.sent("b", 1, 0, 0),
        Sent.sent("a", 2, 0, 0),
        Sent.sent("c", 3, 0, 0));
    List<Outcome> outcomes = rule.settle(sent, PublishResult.of(4, Map.of(0, refused)), random);

    assertThat(fates(outcomes)).containsExactly(RETRY, ACKNOWLEDGED, HELD_BACK, ACKNOWLEDGED);
    assertThat(outcomes.get(0).attempts()).as("the broker took others: the failure counts").isEqualTo(1);
    assertThat(outcomes.get(0).cause()).isSameAs(refused);
    assertThat(outcomes.get(0).error()).contains("broker refused it");
  }

  @Test
  void aFailureWhileNothingGotThroughIsAnOutageAndCountsNoAttempt() {
    List<Sent> sent = List.of(Sent.sent("a", 0, 2, 5), Sent.sent("b", 1, 2, 5));
    List<Outcome> outcomes = rule.settle(sent, PublishResult.allFailed(2, refused), random);

    assertThat(fates(outcomes)).containsExactly(RETRY, RETRY);
    assertThat(outcomes).allSatisfy(o -> assertThat(o.attempts()).isEqualTo(2));
  }

  @Test
  void theLastAttemptTheBudgetAllowsDeadLettersAndTheGroupMovesOn() {
    List<Sent> sent = List.of(Sent.sent("a", 0, 2, 2), Sent.sent("a", 1, 0, 0), Sent.sent("b", 2, 0, 0));
    List<Outcome> outcomes = rule.settle(sent, PublishResult.of(3, Map.of(0, refused)), random);

    assertThat(fates(outcomes)).containsExactly(DEAD_LETTERED, ACKNOWLEDGED, ACKNOWLEDGED);
    assertThat(outcomes.get(0).attempts()).isEqualTo(3);
  }

  @Test
  void aPermanentErrorDeadLettersAtOnceEvenInAnOutage() {
    Exception tooLarge = new PermanentPublishException("record too large", null);
    List<Outcome> outcomes = rule.settle(List.of(Sent.sent("a", 0, 0, 0)),
        PublishResult.allFailed(1, tooLarge), random);

    assertThat(fates(outcomes)).containsExactly(DEAD_LETTERED);
    assertThat(outcomes.get(0).attempts()).isEqualTo(1);
  }

  @Test
  void anUnreadableEventDeadLettersWithoutHoldingUpItsGroupUnlessARetryCameFirst() {
    List<Sent> sent = List.of(
        Sent.unreadable("a", "not JSON"),
        Sent.sent("a", 0, 0, 0),
        Sent.sent("b", 1, 0, 0),
        Sent.unreadable("b", "no type"));
    List<Outcome> outcomes = rule.settle(sent, PublishResult.of(2, Map.of(1, refused)), random);

    assertThat(fates(outcomes)).containsExactly(DEAD_LETTERED, ACKNOWLEDGED, RETRY, HELD_BACK);
    assertThat(outcomes.get(0).error()).isEqualTo("not JSON");
    assertThat(outcomes.get(0).attempts()).isEqualTo(1);
  }

  @Test
  void theBackoffGrowsWithTheFailuresInARowWithinThePolicysBound() {
    Duration longest = Duration.ZERO;
    for (int i = 0; i < 200; i++) {
      Outcome o = rule.settle(List.of(Sent.sent("a", 0, 0, 10)), PublishResult.allFailed(1, refused), random).get(0);
      assertThat(o.backoff()).isBetween(Duration.ZERO, Duration.ofSeconds(8));
      longest = o.backoff().compareTo(longest) > 0 ? o.backoff() : longest;
    }
    Duration firstLongest = Duration.ZERO;
    for (int i = 0; i < 200; i++) {
      Outcome o = rule.settle(List.of(Sent.sent("a", 0, 0, 0)), PublishResult.allFailed(1, refused), random).get(0);
      assertThat(o.backoff()).isBetween(Duration.ZERO, Duration.ofSeconds(1));
      firstLongest = o.backoff().compareTo(firstLongest) > 0 ? o.backoff() : firstLongest;
    }
    assertThat(longest).isGreaterThan(firstLongest);
  }

  private static List<Fate> fates(List<Outcome> outcomes) {
    return outcomes.stream().map(Outcome::fate).toList();
  }
}
