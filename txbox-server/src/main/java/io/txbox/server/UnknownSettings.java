package io.txbox.server;

import io.txbox.spi.support.Spelling;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Finds settings that no command reads: keys of the config file and {@code TXBOX_*} environment
 * variables. A typo such as {@code batch-szie=0} would otherwise leave the relay running on a
 * default the user meant to change. A key any txbox command reads is accepted, so one file can
 * serve both {@code migrate} and {@code relay}.
 *
 * <p>The environment is shared with every other program; the variables Kubernetes adds for
 * Services whose names start with {@code txbox} are taken out before ({@link ServiceLinks}), and
 * any other unknown {@code TXBOX_*} variable is refused.
 */
final class UnknownSettings {
  /** Variables that txbox's test kit reads, not the commands; they may be set where txbox runs. */
  private static final Set<String> TEST_KIT_VARIABLES =
      Set.of("TXBOX_TEST_JDBC_URL", "TXBOX_TEST_KAFKA", "TXBOX_RABBITMQ_SERVER", "TXBOX_NATS_SERVER");

  private final Set<String> options = new TreeSet<>();

  UnknownSettings(CommandLine root) {
    collect(root);
  }

  private void collect(CommandLine command) {
    for (OptionSpec option : command.getCommandSpec().options()) {
      String name = option.longestName().substring(2);
      if (option.longestName().startsWith("--") && !EnvironmentDefaults.ONLY_ON_THE_COMMAND_LINE.contains(name)) {
        options.add(name);
      }
    }
    command.getSubcommands().values().forEach(this::collect);
  }

  /** One line per unknown setting, naming where it came from and the closest option, if any. */
  List<String> find(Properties file, String filePath, Map<String, String> environment) {
    List<String> problems = new ArrayList<>();
    new TreeSet<>(file.stringPropertyNames()).forEach(key -> {
      if (!options.contains(key)) {
        problems.add("unknown setting '" + key + "' in " + filePath + " (--config)" + suggestion(key));
      }
    });
    new TreeSet<>(environment.keySet()).forEach(variable -> {
      if (variable.startsWith("TXBOX_") && !variable.equals("TXBOX_CONFIG") && !variable.equals(Plugins.VARIABLE)
          && !TEST_KIT_VARIABLES.contains(variable) && !isOptionVariable(variable)) {
        String asOption = variable.substring("TXBOX_".length()).toLowerCase(java.util.Locale.ROOT).replace('_', '-');
        problems.add("unknown environment variable " + variable + suggestion(asOption));
      }
    });
    return problems;
  }

  private boolean isOptionVariable(String variable) {
    return options.stream().anyMatch(o -> EnvironmentDefaults.variable(o).equals(variable));
  }

  private String suggestion(String name) {
    if (EnvironmentDefaults.ONLY_ON_THE_COMMAND_LINE.contains(name)) {
      return ": --" + name + " is taken from the command line only, never from a file or the environment";
    }
    return Spelling.closest(name, options.stream().filter(o -> !o.equals("help") && !o.equals("version")).toList())
        .map(o -> ": did you mean '" + o + "' (" + EnvironmentDefaults.variable(o) + ")?")
        .orElse(": no txbox command has such an option (see txbox <command> --help)");
  }
}
