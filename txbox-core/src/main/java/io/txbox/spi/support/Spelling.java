package io.txbox.spi.support;

import java.util.Collection;
import java.util.Comparator;
import java.util.Optional;

/**
 * The known name a mistyped one most likely meant, for the "did you mean" of an error: the
 * closest by edit distance, if it is close enough to be a typo ({@code lnger.ms} for
 * {@code linger.ms}, {@code batch-szie} for {@code batch-size}).
 *
 * <pre>{@code
 * Spelling.closest("lnger.ms", ProducerConfig.configNames())
 *     .ifPresent(name -> message.append(": did you mean ").append(name).append('?'));
 * }</pre>
 */
public final class Spelling {
  /** Longer typed names get no suggestion: the comparison costs their length times each name's. */
  private static final int LONGEST_COMPARED = 200;

  private Spelling() {}

  /**
   * The name of {@code known} closest to {@code typed}, when at most two edits away (a third of
   * the typed length for longer names); empty when none is that close, and for names longer than
   * 200 characters, which no typo makes.
   */
  public static Optional<String> closest(String typed, Collection<String> known) {
    if (typed.length() > LONGEST_COMPARED) {
      return Optional.empty();
    }
    int allowed = Math.max(2, typed.length() / 3);
    return known.stream()
        .min(Comparator.comparingInt((String name) -> distance(typed, name)).thenComparing(Comparator.naturalOrder()))
        .filter(name -> distance(typed, name) <= allowed);
  }

  /** Edit distance, with a swap of two neighbours counting as one edit. */
  public static int distance(String a, String b) {
    int[][] d = new int[a.length() + 1][b.length() + 1];
    for (int i = 0; i <= a.length(); i++) {
      d[i][0] = i;
    }
    for (int j = 0; j <= b.length(); j++) {
      d[0][j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
        if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
          d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.length()][b.length()];
  }
}
