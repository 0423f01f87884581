package io.txbox.server;

import java.util.Map;
import java.util.Properties;
import java.util.Set;
import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Option values not given as flags: first the environment ({@code --batch-size} is
 * {@code TXBOX_BATCH_SIZE}), then the properties file ({@code batch-size=500}), then the
 * option's own default. {@code --execute} comes from the command line only.
 */
final class EnvironmentDefaults implements IDefaultValueProvider {
  /** Options that change data for good: a variable or a file left behind must never turn them on. */
  static final Set<String> ONLY_ON_THE_COMMAND_LINE = Set.of("execute");

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
    if (ONLY_ON_THE_COMMAND_LINE.contains(name)) {
      return argSpec.defaultValue();
    }
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
