package io.txbox.kafka.internal;

import io.txbox.spi.support.Spelling;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * The properties a user hands the Kafka client, checked against the client's own definitions
 * when the publisher or subscriber is built. Without this, a misspelt name ({@code lnger.ms}) was
 * dropped with a warning the client logs among many, and a bad value ({@code linger.ms=abc})
 * failed only inside the first send, retried for ever while the relay looked healthy.
 *
 * <p>An unknown name is refused, with the closest property when it looks like a typo. The one
 * exception: when the properties name a plugin (a class such as {@code interceptor.classes},
 * {@code metric.reporters} or a SASL callback handler), a name that resembles no property is
 * passed on, since plugins read settings of their own from the same properties. A value is
 * parsed and validated as the client would, and refused with the client's own reason.
 *
 * <pre>{@code
 * ClientProperties.check("producer", ProducerConfig.configDef(), Map.of("linger.ms", "abc"));
 * // Refused: producer property linger.ms: Invalid value abc for configuration linger.ms: Not a number of type LONG
 * }</pre>
 */
public final class ClientProperties {
  /** Longest name or reason quoted back: the environment or a config file may hold anything. */
  private static final int QUOTED_LENGTH = 200;

  /** A property the Kafka client would not take; its message names the property and the fix. */
  public static final class Refused extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    Refused(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private ClientProperties() {}

  /**
   * Checks every property the user gave.
   *
   * @param client {@code producer} or {@code consumer}, for the message
   * @param definitions the client's definitions, {@code ProducerConfig.configDef()}
   * @param given the properties the user set (not txbox's defaults), by name
   * @throws Refused for the first property the client would not take
   */
  public static void check(String client, ConfigDef definitions, Map<String, ?> given) {
    Map<String, ConfigDef.ConfigKey> keys = definitions.configKeys();
    boolean plugins = given.keySet().stream().map(keys::get).anyMatch(ClientProperties::namesPlugins);
    for (Map.Entry<String, ?> property : given.entrySet()) {
      ConfigDef.ConfigKey key = keys.get(property.getKey());
      if (key == null) {
        unknown(client, property.getKey(), keys, plugins);
      } else {
        parse(client, key, property.getValue());
      }
    }
  }

  private static void unknown(String client, String name, Map<String, ConfigDef.ConfigKey> keys, boolean plugins) {
    String suggestion = Spelling.closest(name, keys.keySet()).orElse(null);
    if (suggestion == null && plugins) {
      return; // a plugin's own setting: the client hands every property to its plugins
    }
    String docs = "https://kafka.apache.org/documentation/#" + client + "configs";
    throw new Refused("unknown " + client + " property '" + shown(name) + "'"
        + (suggestion != null ? ": did you mean '" + suggestion + "'?"
            : ": the Kafka " + client + " has no such property (its properties: " + docs + ")"), null);
  }

  private static void parse(String client, ConfigDef.ConfigKey key, Object value) {
    try {
      Object parsed = ConfigDef.parseType(key.name, value, key.type);
      if (key.validator != null) {
        key.validator.ensureValid(key.name, parsed);
      }
    } catch (ConfigException e) { // "Invalid value abc for configuration linger.ms: Not a number of type LONG"
      throw new Refused(client + " property " + key.name + ": " + shown(String.valueOf(e.getMessage())), e);
    }
  }

  /** Whether {@code key} loads classes that may read properties of their own. */
  private static boolean namesPlugins(ConfigDef.ConfigKey key) {
    return key != null && (key.type == ConfigDef.Type.CLASS || key.name.endsWith(".classes")
        || key.name.equals("metric.reporters") || key.name.equals("config.providers"));
  }

  private static String shown(String text) {
    String printable = text.replaceAll("\\p{Cntrl}", "?");
    return printable.length() > QUOTED_LENGTH ? printable.substring(0, QUOTED_LENGTH) + "..." : printable;
  }
}
