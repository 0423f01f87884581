package io.txbox.server;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Reads {@code 250ms}, {@code 5s}, {@code 2m}, {@code 1h}, {@code 7d}, or ISO-8601 such as {@code PT5S}: the
 * durations of every txbox command.
 *
 * <pre>{@code
 * @Option(names = "--timeout", converter = DurationConverter.class, defaultValue = "5m") Duration timeout;
 * }</pre>
 */
public final class DurationConverter implements ITypeConverter<Duration> {
  private static final Pattern SIMPLE = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)");

  /** A converter; picocli makes its own. */
  public DurationConverter() {}

  /** A duration as these options take it: {@code 30d}, {@code 1h}, {@code 500ms}, the largest whole unit. */
  static String format(Duration d) {
    long millis = d.toMillis();
    if (millis != 0 && millis % 86_400_000 == 0) {
      return millis / 86_400_000 + "d";
    }
    if (millis != 0 && millis % 3_600_000 == 0) {
      return millis / 3_600_000 + "h";
    }
    if (millis != 0 && millis % 60_000 == 0) {
      return millis / 60_000 + "m";
    }
    return millis % 1000 == 0 ? millis / 1000 + "s" : millis + "ms";
  }

  @Override
  public Duration convert(String value) {
    Matcher m = SIMPLE.matcher(value.trim());
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2)) {
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        default -> Duration.ofDays(n);
      };
    }
    try {
      return Duration.parse(value.trim());
    } catch (RuntimeException e) {
      throw new TypeConversionException(
          "'" + value + "' is not a duration: use a number with ms, s, m, h or d, such as 500ms, 30s or 7d");
    }
  }
}
