package io.txbox.server.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class SignInLogTest {
  private final Instant now = Instant.parse("2026-11-29T12:00:00Z");

  @Test
  void aGuessingLoopWritesAtMostTwentyLinesAMinuteAndThenSaysHowManyWentUnlogged() {
    String logged = captured(() -> {
      SignInLog log = new SignInLog();
      for (int i = 0; i < 10_000; i++) {
        log.warn(now.plusMillis(i), "console: failed sign-in for user '{}' from {}", "bob", "203.0.113.9");
      }
      log.warn(now.plusSeconds(61), "console: failed sign-in for user '{}' from {}", "bob", "203.0.113.9");
    });

    assertThat(logged.lines().filter(l -> l.contains("failed sign-in for user 'bob'"))).hasSize(21);
    assertThat(logged).contains("console: 9980 more failed or refused sign-ins were not logged (at most 20 lines a minute)");
  }

  /** What slf4j-simple writes to System.err while {@code action} runs. */
  private static String captured(Runnable action) {
    PrintStream original = System.err;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    System.setErr(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    try {
      action.run();
    } finally {
      System.setErr(original);
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }
}
