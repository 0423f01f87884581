package io.txbox.server;

import java.util.Map;
import java.util.Properties;
import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Option values not given as flags: first the environment ({@code --batch-size} is
 * {@code TXBOX_BATCH_SIZE}), then the properties file ({@code batch-size=500}), then the
 * option's own default.
 */
final class EnvironmentDefaults implements IDefaultValueProvider {
  private final Map<String, String> environment;
  private final Properties file;

  EnvironmentDefaults(Map<String, String> environment, Properties file) {
    this.environment = environment;
    this.file = file;
  }

  @Override
  public String defaultValue(ArgSpec argSpec) {
    if (!(argSpec instanceof OptionSpec option) || !option.longestName().startsWith("--")) {
      return argSpec.defaultValue();
    }
    String name = option.longestName().substring(2);
    String fromEnvironment = environment.get(variable(name));
    if (fromEnvironment != null) {
      return fromEnvironment;
    }
    return file.getProperty(name, argSpec.defaultValue());
  }

  /** The environment variable for an option name: {@code batch-size} is {@code TXBOX_BATCH_SIZE}. */
  static String variable(String optionName) {
    return "TXBOX_" + optionName.toUpperCase(java.util.Locale.ROOT).replace('-', '_');
  }
}
