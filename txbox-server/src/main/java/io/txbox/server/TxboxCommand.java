package io.txbox.server;

import io.txbox.TxboxException;
import io.txbox.spi.support.Secrets;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

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
    subcommands = {MigrateCommand.class, RelayCommand.class, StatusCommand.class, DeadLettersCommand.class,
        ReplayCommand.class, AuditCommand.class, ConsoleCommand.class, LogicalCommand.class})
final class TxboxCommand {
  /** The " (java.lang.NumberFormatException: ...)" picocli appends to a conversion error. */
  private static final Pattern JAVA_CAUSE = Pattern.compile("\\s*\\((?:[a-z]\\w*\\.)+[A-Z]\\w*(?:Exception|Error)\\b[^)]*\\)");

  /** A command line whose defaults come from the environment and the properties file. */
  static CommandLine commandLine(String[] args) {
    return commandLine(args, System.getenv());
  }

  /** A command line reading defaults from {@code environment} instead of the process's. */
  static CommandLine commandLine(String[] args, Map<String, String> environment) {
    return commandLine(new TxboxCommand(), args, environment);
  }

  /**
   * A command line for {@code command} with txbox's conventions: defaults from the environment and
   * the properties file, unknown settings refused, errors as one line naming the option.
   */
  static CommandLine commandLine(Object command, String[] args, Map<String, String> wholeEnvironment) {
    Map<String, String> environment = ServiceLinks.without(wholeEnvironment);
    CommandLine cli = new CommandLine(command);
    BrokerOptions.addTo(cli, Plugins.loader(environment));
    String path = configPath(args, environment);
    Properties file = configFile(path);
    cli.setDefaultValueProvider(new EnvironmentDefaults(environment, file));
    List<String> unknown = new UnknownSettings(cli).find(file, path, environment);
    cli.setExecutionStrategy(parsed -> {
      if (!unknown.isEmpty() && !parsed.isUsageHelpRequested() && !parsed.isVersionHelpRequested()) {
        String name = parsed.subcommand() == null ? parsed.commandSpec().name()
            : parsed.subcommand().commandSpec().name();
        unknown.forEach(problem -> parsed.commandSpec().commandLine().getErr().println(name + ": " + problem));
        return 2;
      }
      CommandLine chosen = parsed.asCommandLineList().get(parsed.asCommandLineList().size() - 1);
      Optional<String> nul = optionWithNul(chosen.getCommandSpec());
      if (nul.isPresent()) {
        chosen.getErr().println(chosen.getCommandName() + ": invalid " + nul.get() + " ("
            + EnvironmentDefaults.variable(nul.get().substring(2)) + "): it holds a NUL character, which no setting"
            + " can hold: remove it");
        return 2;
      }
      return new CommandLine.RunLast().execute(parsed);
    });
    cli.setExecutionExceptionHandler((e, line, parsed) -> {
      line.getErr().println(line.getCommandName() + ": " + TerminalText.line(describe(e), TerminalText.ERROR_LIMIT));
      return e instanceof IllegalArgumentException ? 2 : 1;
    });
    cli.setParameterExceptionHandler(TxboxCommand::refuse);
    return cli;
  }

  /**
   * The first option whose value, from the command line, the environment or the file, holds a NUL
   * character: PostgreSQL, brokers and files all cut text there or refuse it.
   */
  private static Optional<String> optionWithNul(CommandSpec spec) {
    for (OptionSpec option : spec.options()) {
      if (String.valueOf((Object) option.getValue()).indexOf('\0') >= 0) { // lists and maps print their values
        return Optional.of(option.longestName());
      }
    }
    return Optional.empty();
  }

  /**
   * Refuses, naming them, those of {@code options} that were given on the command line where they
   * do not apply ({@code why} says so): an option silently ignored misleads whoever gave it.
   *
   * @throws IllegalArgumentException naming the options and {@code why}
   */
  static void refuseGiven(CommandSpec spec, String why, String... options) {
    CommandLine.ParseResult parsed = spec.commandLine().getParseResult();
    List<String> given = java.util.Arrays.stream(options).filter(parsed::hasMatchedOption).toList();
    if (!given.isEmpty()) {
      throw new IllegalArgumentException("invalid " + String.join(", ", given) + ": they " + why);
    }
  }

  /**
   * A command line picocli cannot parse: one line naming what is wrong, arguments masked and made
   * printable, never the usage (a screenful that hides the one line that matters) or a Java class name.
   */
  private static int refuse(CommandLine.ParameterException e, String[] args) {
    CommandLine line = e.getCommandLine();
    String problem = e instanceof CommandLine.UnmatchedArgumentException unmatched
        ? unknownOptions(unmatched, args) : JAVA_CAUSE.matcher(String.valueOf(e.getMessage())).replaceAll("");
    line.getErr().println(line.getCommandSpec().qualifiedName() + ": "
        + TerminalText.line(Secrets.mask(problem), TerminalText.ERROR_LIMIT)
        + " (" + line.getCommandSpec().qualifiedName() + " --help lists the options)");
    return 2;
  }

  /**
   * The unknown options by name alone: what follows a mistyped option is its value, and a value
   * may be a password ({@code --db-pasword s3cr3t}), so no value is repeated, not even masked.
   */
  private static String unknownOptions(CommandLine.UnmatchedArgumentException e, String[] args) {
    List<String> names = e.getUnmatched().stream().filter(a -> a.startsWith("-"))
        .map(a -> a.contains("=") ? a.substring(0, a.indexOf('=')) : a)
        .map(a -> "'" + TerminalText.of(a, 80) + "'").toList();
    if (names.isEmpty()) {
      return "unexpected argument(s): " + e.getUnmatched().size() + " value(s) that no option takes (not repeated here)";
    }
    List<String> suggestions = e.getSuggestions();
    return "unknown option(s) " + String.join(", ", names)
        + (suggestions.isEmpty() ? "" : "; did you mean " + String.join(" or ", suggestions.subList(0,
            Math.min(3, suggestions.size()))) + "?")
        + BrokerOptions.missingBroker(e.getCommandLine(), List.of(args), e.getUnmatched()).orElse("");
  }

  private static String describe(Exception e) {
    if (e instanceof IllegalArgumentException) {
      return Secrets.mask(SettingNames.explain(e.getMessage()));
    }
    if (e instanceof TxboxException) {
      return Secrets.mask(e.getMessage());
    }
    return Secrets.mask(e.toString());
  }

  /** The file named by {@code --config FILE}, {@code --config=FILE} or TXBOX_CONFIG, or null. */
  private static String configPath(String[] args, Map<String, String> environment) {
    String path = environment.get("TXBOX_CONFIG");
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--config") && i + 1 < args.length) {
        path = args[i + 1];
      } else if (args[i].startsWith("--config=")) {
        path = args[i].substring("--config=".length());
      }
    }
    return path;
  }

  private static Properties configFile(String path) {
    Properties properties = new Properties();
    if (path != null) {
      try (InputStream in = Files.newInputStream(Path.of(path))) {
        properties.load(in);
      } catch (IOException | IllegalArgumentException e) { // IllegalArgumentException: a malformed unicode escape
        throw new IllegalArgumentException("--config (TXBOX_CONFIG): cannot read " + path + ": " + e.getMessage()
            + "; fix the file or name another one", e);
      }
    }
    return properties;
  }
}
