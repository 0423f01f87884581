package io.txbox.spi;

import io.txbox.spi.TransportSetting.Kind;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The values a front end was given for one {@link Transport}'s settings, all as text, read by the
 * transport with the kind each setting declares. Every error names the setting the way the user
 * wrote it ({@code --nats-ack-timeout (TXBOX_NATS_ACK_TIMEOUT)}, {@code txbox.nats.ack-timeout}),
 * through the {@code named} function the front end passes.
 *
 * <pre>{@code
 * TransportSettings settings = new TransportSettings(nats, Map.of("ack-timeout", "5s"),
 *     setting -> "txbox.nats." + setting);
 * settings.duration("ack-timeout").ifPresent(builder::ackTimeout);
 * }</pre>
 */
public final class TransportSettings {
  private static final Pattern SIMPLE_DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)");
  /** The first word of a builder's refusal, the Java name of the setting ({@code ackTimeout must be ...}). */
  private static final Pattern JAVA_NAME = Pattern.compile("^([a-z][A-Za-z0-9]*) ");

  private final Transport transport;
  private final Map<String, TransportSetting> declared = new LinkedHashMap<>();
  private final Map<String, String> values;
  private final Function<String, String> named;

  /**
   * Settings for {@code transport}: {@code values} by setting name, a {@link Kind#PROPERTIES}
   * setting's entries as {@code setting.property} ({@code producer.acks}). A name the transport
   * does not declare is refused.
   *
   * @param named how the user names a setting, for errors: {@code ack-timeout} to {@code txbox.nats.ack-timeout}
   */
  public TransportSettings(Transport transport, Map<String, String> values, Function<String, String> named) {
    this.transport = transport;
    this.named = named;
    transport.settings().forEach(s -> declared.put(s.name(), s));
    this.values = Map.copyOf(values);
    this.values.keySet().forEach(this::requireDeclared);
  }

  /** Whether the user gave {@code setting} a value (a default does not count). */
  public boolean given(String setting) {
    TransportSetting s = setting(setting);
    if (s.kind() == Kind.PROPERTIES) {
      return !properties(setting).isEmpty();
    }
    return values.containsKey(setting);
  }

  /** The text of {@code setting}, given or its default; empty when it has neither. */
  public Optional<String> text(String setting) {
    TransportSetting s = setting(setting);
    return Optional.ofNullable(values.getOrDefault(setting, s.defaultValue()));
  }

  /** {@code setting} as a duration ({@code 10s}, {@code PT10S}). */
  public Optional<Duration> duration(String setting) {
    return text(setting).map(v -> {
      Duration d = parseDuration(v);
      if (d == null || d.isNegative()) {
        throw refused(setting, "'" + v + "' is not a duration: use a number with ms, s, m, h or d, such as 500ms or 30s");
      }
      return d;
    });
  }

  /** {@code setting} as a whole number. */
  public Optional<Integer> integer(String setting) {
    return text(setting).map(v -> {
      try {
        return Integer.valueOf(v.trim());
      } catch (NumberFormatException e) {
        throw refused(setting, "'" + v + "' is not a whole number");
      }
    });
  }

  /** {@code setting} as {@code true} or {@code false}; false when it has neither value nor default. */
  public boolean flag(String setting) {
    String v = text(setting).orElse("false").trim();
    if (!v.equalsIgnoreCase("true") && !v.equalsIgnoreCase("false")) {
      throw refused(setting, "'" + v + "' is neither true nor false");
    }
    return Boolean.parseBoolean(v);
  }

  /** The client properties given under {@code setting} ({@code producer.acks=all} is {@code acks=all}). */
  public Map<String, String> properties(String setting) {
    setting(setting);
    String prefix = setting + ".";
    Map<String, String> found = new LinkedHashMap<>();
    values.forEach((k, v) -> {
      if (k.startsWith(prefix)) {
        found.put(k.substring(prefix.length()), v);
      }
    });
    return found;
  }

  /**
   * Runs a client builder; a setting it refuses ({@code ackTimeout must be ...}) fails again with
   * the setting named as the user wrote it.
   */
  public <T> T build(Supplier<T> build) {
    try {
      return build.get();
    } catch (IllegalArgumentException e) {
      String setting = settingOf(e.getMessage());
      if (setting == null) {
        throw e;
      }
      throw refused(setting, e.getMessage(), e);
    }
  }

  /** The error for a value of {@code setting} that cannot be used, naming it as the user does. */
  public IllegalArgumentException refused(String setting, String why) {
    return refused(setting, why, null);
  }

  private IllegalArgumentException refused(String setting, String why, Throwable cause) {
    return new IllegalArgumentException("invalid " + named.apply(setting) + ": " + why, cause);
  }

  /**
   * A duration as txbox's settings take it: {@code 500ms}, {@code 30s}, {@code 5m}, {@code 1h},
   * {@code 7d} or ISO-8601; null when it is neither, or too large for a {@link Duration}.
   */
  public static Duration parseDuration(String value) {
    try {
      Matcher m = SIMPLE_DURATION.matcher(value.trim());
      if (!m.matches()) {
        return Duration.parse(value.trim());
      }
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2)) {
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        default -> Duration.ofDays(n);
      };
    } catch (RuntimeException e) { // DateTimeParseException, NumberFormatException, ArithmeticException
      return null;
    }
  }

  private TransportSetting setting(String name) {
    TransportSetting s = declared.get(name);
    if (s == null) { // the transport asked for a setting it did not declare: its bug, not the user's
      throw new IllegalStateException(transport.name() + " reads setting " + name + " but does not declare it");
    }
    return s;
  }

  private void requireDeclared(String key) {
    TransportSetting s = declared.get(key);
    int dot = key.indexOf('.');
    TransportSetting owner = dot > 0 ? declared.get(key.substring(0, dot)) : null;
    boolean known = s != null && s.kind() != Kind.PROPERTIES || owner != null && owner.kind() == Kind.PROPERTIES;
    if (!known) {
      String shown = key.replaceAll("\\p{Cntrl}", "?"); // a key from the environment may hold anything
      throw new IllegalArgumentException(named.apply(shown.length() > 80 ? shown.substring(0, 80) + "..." : shown)
          + " is no setting of " + transport.name() + ": its settings are " + declared.keySet());
    }
  }

  /** The setting a builder's refusal names, {@code ackTimeout} as {@code ack-timeout}; null if none. */
  private String settingOf(String message) {
    Matcher m = JAVA_NAME.matcher(message == null ? "" : message);
    if (!m.find()) {
      return null;
    }
    String name = m.group(1).replaceAll("([A-Z])", "-$1").toLowerCase(java.util.Locale.ROOT);
    return declared.containsKey(name) ? name : null;
  }
}
