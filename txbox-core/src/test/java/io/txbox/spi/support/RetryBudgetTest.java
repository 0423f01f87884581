package io.txbox.spi.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import org.junit.jupiter.api.Test;

class RetryBudgetTest {

  @Test
  void anErrorIsDescribedWithItsCauseAndItsRootCauseWhereTheWrappersSayNothing() {
    Exception error = new IllegalStateException("Failed to construct kafka producer",
        new IllegalStateException("Failed to create new NetworkClient",
            new IOException("Failed to load SSL keystore", new NoSuchFileException("/etc/kafka/ts.jks"))));

    assertThat(RetryBudget.describe(error)).isEqualTo("java.lang.IllegalStateException: Failed to construct kafka producer"
        + " (caused by java.lang.IllegalStateException: Failed to create new NetworkClient)"
        + " (root cause java.nio.file.NoSuchFileException: /etc/kafka/ts.jks)");
  }

  @Test
  void aCauseThatIsItsOwnRootIsNamedOnceAndAHugeMessageIsCut() {
    assertThat(RetryBudget.describe(new IllegalStateException("a", new IOException("b"))))
        .isEqualTo("java.lang.IllegalStateException: a (caused by java.io.IOException: b)");
    assertThat(RetryBudget.describe(new IllegalStateException("x".repeat(100_000))))
        .hasSize(RetryBudget.MAX_ERROR_LENGTH);
  }
}
