package io.txbox.server;

import io.txbox.spi.TransportSettings;
import java.time.Duration;
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
  /** Longest duration any option takes: ten years. */
  static final Duration LONGEST = Duration.ofDays(3650);

  /** A converter; picocli makes its own. */
  public DurationConverter() {}

  /** A duration as these options take it: {@code 30d}, {@code 1h}, {@code 500ms}, the largest whole unit. */
  public static String format(Duration d) {
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
    Duration parsed = TransportSettings.parseDuration(value);
    if (parsed == null) {
      throw new TypeConversionException(
          "'" + value + "' is not a duration: use a number with ms, s, m, h or d, such as 500ms, 30s or 7d");
    }
    if (parsed.isNegative()) { // no txbox setting waits or keeps for less than nothing
      throw new TypeConversionException("'" + value + "' is negative: give 0 or more, such as 500ms, 30s or 7d");
    }
    if (parsed.compareTo(LONGEST) > 0) { // nor for longer than the software will run
      throw new TypeConversionException("'" + value + "' is over " + format(LONGEST) + ", the longest any setting takes");
    }
    return parsed;
  }
}
