package io.txbox.server;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns a builder's validation message ("batchSize must be >= 1 ...") into one that names the
 * command-line option and environment variable that set it.
 */
final class SettingNames {
  private static final Pattern SETTING = Pattern.compile("^(retry )?([a-z][A-Za-z]*) (?:and [a-z][A-Za-z]* )?must ");

  private SettingNames() {}

  static String explain(String message) {
    if (message == null) {
      return "invalid setting";
    }
    if (message.startsWith("invalid --")) { // already names its option
      return message;
    }
    Matcher m = SETTING.matcher(message);
    if (!m.find()) {
      return message;
    }
    String option = (m.group(1) == null ? "" : "retry-") + kebab(m.group(2));
    return "invalid --" + option + " (" + EnvironmentDefaults.variable(option) + "): " + message;
  }

  private static String kebab(String camel) {
    return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
  }
}
