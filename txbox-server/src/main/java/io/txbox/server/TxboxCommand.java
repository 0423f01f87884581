package io.txbox.server;

import io.txbox.TxboxException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code txbox} command and its subcommands. */
@Command(
    name = "txbox",
    mixinStandardHelpOptions = true,
    version = "txbox 0.1.0",
    description = {
      "The transactional outbox relay.",
      "",
      "Every option can also be set with an environment variable (--batch-size: TXBOX_BATCH_SIZE)",
      "or in a properties file named by --config or TXBOX_CONFIG (batch-size=500).",
      "A flag wins over the environment, which wins over the file."
    },
    subcommands = {MigrateCommand.class, RelayCommand.class, QuickstartCommand.class, DemoCommand.class})
final class TxboxCommand {

  /** A command line whose defaults come from the environment and the properties file. */
  static CommandLine commandLine(String[] args) {
    return commandLine(args, System.getenv());
  }

  /** A command line reading defaults from {@code environment} instead of the process's. */
  static CommandLine commandLine(String[] args, Map<String, String> environment) {
    CommandLine cli = new CommandLine(new TxboxCommand());
    Properties file = configFile(args, environment);
    cli.setDefaultValueProvider(new EnvironmentDefaults(environment, file));
    cli.setExecutionExceptionHandler((e, line, parsed) -> {
      line.getErr().println(line.getCommandName() + ": " + describe(e));
      return e instanceof IllegalArgumentException ? 2 : 1;
    });
    return cli;
  }

  private static String describe(Exception e) {
    if (e instanceof IllegalArgumentException) {
      return SettingNames.explain(e.getMessage());
    }
    if (e instanceof TxboxException) {
      return e.getMessage();
    }
    return e.toString();
  }

  /** The file named by {@code --config FILE}, {@code --config=FILE} or TXBOX_CONFIG. */
  private static Properties configFile(String[] args, Map<String, String> environment) {
    String path = environment.get("TXBOX_CONFIG");
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--config") && i + 1 < args.length) {
        path = args[i + 1];
      } else if (args[i].startsWith("--config=")) {
        path = args[i].substring("--config=".length());
      }
    }
    Properties properties = new Properties();
    if (path != null) {
      try (InputStream in = Files.newInputStream(Path.of(path))) {
        properties.load(in);
      } catch (IOException e) {
        throw new IllegalArgumentException("--config (TXBOX_CONFIG): cannot read " + path + ": " + e);
      }
    }
    return properties;
  }
}
