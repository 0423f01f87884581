package io.txbox.server;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Reads {@code 250ms}, {@code 5s}, {@code 2m}, {@code 1h}, or ISO-8601 such as {@code PT5S}: the
 * durations of every txbox command.
 *
 * <pre>{@code
 * @Option(names = "--timeout", converter = DurationConverter.class, defaultValue = "5m") Duration timeout;
 * }</pre>
 */
public final class DurationConverter implements ITypeConverter<Duration> {
  private static final Pattern SIMPLE = Pattern.compile("(\\d+)\\s*(ms|s|m|h)");

  /** A converter; picocli makes its own. */
  public DurationConverter() {}

  @Override
  public Duration convert(String value) {
    Matcher m = SIMPLE.matcher(value.trim());
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2)) {
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        default -> Duration.ofHours(n);
      };
    }
    try {
      return Duration.parse(value.trim());
    } catch (RuntimeException e) {
      throw new TypeConversionException(
          "'" + value + "' is not a duration: use a number with ms, s, m or h, such as 500ms or 30s");
    }
  }
}
