package io.txbox.server.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class SignInThrottleTest {
  private final SignInThrottle throttle = new SignInThrottle();
  private final Instant now = Instant.parse("2026-11-28T08:00:00Z");

  private void fail(String address, String user, int times) {
    for (int i = 0; i < times; i++) {
      throttle.failed(address, user, false, now);
    }
  }

  @Test
  void oneClientGuessingOnePasswordWaitsAfterFiveAndEachWaitDoubles() {
    fail("203.0.113.9", "bob", 5);
    assertThat(throttle.waitFor("203.0.113.9", "bob", false, now)).hasValue(Duration.ofSeconds(1));
    fail("203.0.113.9", "bob", 1);
    assertThat(throttle.waitFor("203.0.113.9", "bob", false, now)).hasValue(Duration.ofSeconds(2));
    assertThat(throttle.waitFor("203.0.113.9", "carol", false, now)).as("the address guesses, whatever the name")
        .hasValue(Duration.ofSeconds(2));
  }

  @Test
  void aGuesserElsewhereNeverHoldsBackTheUserNorAnotherClient() {
    fail("203.0.113.9", "bob", 12);
    assertThat(throttle.waitFor("198.51.100.7", "bob", false, now)).as("bob from a new place").isEmpty();
    assertThat(throttle.waitFor("198.51.100.8", "carol", false, now)).isEmpty();
  }

  @Test
  void manyClientsGuessingOneUserSlowNewPlacesButNeverOneTheUserSignedInFrom() {
    throttle.succeeded("198.51.100.7", "bob"); // bob's desk
    for (int i = 0; i < SignInThrottle.FREE_USER_FAILURES; i++) {
      throttle.failed("203.0.113." + i, "bob", false, now); // one guess from each of many addresses
    }
    assertThat(throttle.waitFor("203.0.113.200", "bob", false, now)).as("yet another address").isPresent();
    assertThat(throttle.waitFor("198.51.100.7", "bob", false, now)).as("bob's desk").isEmpty();
    fail("198.51.100.7", "bob", 2); // bob's own typos at his desk do not add to the guessers' count
    assertThat(throttle.waitFor("198.51.100.7", "bob", false, now)).isEmpty();
  }

  @Test
  void aBrowserWithTheUsersDeviceCookieIsNotHeldBackByGuessesFromElsewhere() {
    for (int i = 0; i < SignInThrottle.FREE_USER_FAILURES; i++) {
      throttle.failed("203.0.113." + i, "bob", false, now);
    }
    assertThat(throttle.waitFor("198.51.100.9", "bob", false, now)).as("a new browser somewhere new").isPresent();
    assertThat(throttle.waitFor("198.51.100.9", "bob", true, now)).as("bob's browser somewhere new").isEmpty();
    fail("203.0.113.250", "bob", SignInThrottle.FREE_FAILURES);
    assertThat(throttle.waitFor("203.0.113.250", "bob", true, now)).as("an address that guessed still waits")
        .isPresent();
  }

  @Test
  void aSuccessClearsItsAddressAndItsUser() {
    fail("203.0.113.9", "bob", 7);
    throttle.succeeded("203.0.113.9", "bob");
    assertThat(throttle.waitFor("203.0.113.9", "bob", false, now)).isEmpty();
    assertThat(throttle.waitFor("203.0.113.9", "carol", false, now)).isEmpty();
  }

  @Test
  void theWaitStopsGrowingAtFiveMinutesAndEnds() {
    fail("203.0.113.9", "bob", 40);
    assertThat(throttle.waitFor("203.0.113.9", "bob", false, now)).hasValue(SignInThrottle.MAX_WAIT);
    assertThat(throttle.waitFor("203.0.113.9", "bob", false, now.plus(SignInThrottle.MAX_WAIT))).isEmpty();
  }
}
