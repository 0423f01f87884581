package io.txbox.spi.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class SpellingTest {
  private static final List<String> KNOWN = List.of("batch-size", "linger.ms", "lease-duration", "schema");

  @Test
  void aTypoFindsTheNameItMeant() {
    assertThat(Spelling.closest("batch-szie", KNOWN)).hasValue("batch-size"); // two neighbours swapped: one edit
    assertThat(Spelling.closest("lnger.ms", KNOWN)).hasValue("linger.ms");
    assertThat(Spelling.closest("shema", KNOWN)).hasValue("schema");
  }

  @Test
  void aNameLikeNoneFindsNothing() {
    assertThat(Spelling.closest("colour", KNOWN)).isEmpty();
    assertThat(Spelling.closest("x".repeat(100_000), KNOWN)).isEmpty();
  }

  @Test
  void distanceCountsEdits() {
    assertThat(Spelling.distance("kitten", "sitting")).isEqualTo(3);
    assertThat(Spelling.distance("ab", "ba")).isEqualTo(1);
    assertThat(Spelling.distance("", "abc")).isEqualTo(3);
  }
}
