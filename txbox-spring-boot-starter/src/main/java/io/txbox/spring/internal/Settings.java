package io.txbox.spring.internal;

import java.util.Locale;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Builds txbox objects from {@code txbox.*} properties. The builders name a refused setting the
 * Java way ({@code batchSize must be ...}); a Spring user needs the property to change, so the
 * error is told again with it ({@code txbox.relay.batch-size}).
 */
public final class Settings {
  private static final Pattern SETTING = Pattern.compile("^([a-z][A-Za-z]*) ");

  private Settings() {}

  /** Runs {@code build}; a refused setting fails with the property under {@code prefix}. */
  public static <T> T build(String prefix, Supplier<T> build) {
    try {
      return build.get();
    } catch (IllegalArgumentException e) {
      throw refused(prefix, e);
    }
  }

  /** A builder's refusal told again with the property under {@code prefix} that it names. */
  public static IllegalArgumentException refused(String prefix, IllegalArgumentException e) {
    return new IllegalArgumentException(
        "txbox setting refused, change " + property(prefix, e.getMessage()) + ": " + e.getMessage(), e);
  }

  private static String property(String prefix, String message) {
    Matcher m = SETTING.matcher(message == null ? "" : message);
    if (!m.find()) {
      return prefix + ".*";
    }
    return prefix + "." + m.group(1).replaceAll("([A-Z])", "-$1").toLowerCase(Locale.ROOT);
  }
}
