package io.txbox.cdc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.cdc.ServerWait;
import io.txbox.testkit.SettableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ServerCallsTest {
  private final SettableClock clock = new SettableClock(Instant.parse("2026-01-01T00:00:00Z"));
  private final ServerCalls calls = new ServerCalls("txbox", Duration.ofSeconds(30), clock);

  @Test
  void aCallThatDoesNotReturnIsWarnedOfEveryWarnAfterAndStalledUntilItReturns() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    CompletableFuture<String> call = CompletableFuture.supplyAsync(() -> calls.run("the server to create slot txbox",
        () -> {
          entered.countDown();
          awaitQuietly(release);
          return "created";
        }));
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

    assertThat(calls.longest()).map(ServerWait::what).hasValue("the server to create slot txbox");
    assertThat(calls.stalled()).isEmpty();
    assertThat(calls.report()).isEmpty();
    clock.advance(Duration.ofSeconds(30));
    assertThat(calls.stalled()).map(w -> w.age(clock.instant())).hasValue(Duration.ofSeconds(30));
    assertThat(calls.report()).hasSize(1);
    assertThat(calls.report()).as("warned once per warnAfter").isEmpty();
    clock.advance(Duration.ofSeconds(29));
    assertThat(calls.report()).isEmpty();
    clock.advance(Duration.ofSeconds(1));
    assertThat(calls.report()).as("again a minute in").hasSize(1);

    release.countDown();
    assertThat(call.get(10, TimeUnit.SECONDS)).isEqualTo("created");
    assertThat(calls.longest()).isEmpty();
    assertThat(calls.stalled()).isEmpty();
  }

  @Test
  void aCallThatFailsIsNoLongerWaitedFor() {
    CompletableFuture<Object> call = CompletableFuture.supplyAsync(() -> calls.run("the server to start streaming",
        () -> {
          throw new IllegalStateException("connection refused");
        }));
    assertThat(call).failsWithin(Duration.ofSeconds(10));
    assertThat(calls.longest()).isEmpty();
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(60, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
