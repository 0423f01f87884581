package io.txbox.server;

import io.txbox.spi.support.Secrets;
import java.io.PrintWriter;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine;

/**
 * {@code java -jar txbox.jar <command>}: the standalone relay and its operations commands.
 *
 * <pre>
 * java -jar txbox.jar migrate --jdbc-url jdbc:postgresql://db/app
 * java -jar txbox.jar relay   --jdbc-url jdbc:postgresql://db/app --kafka-bootstrap-servers kafka:9092
 * </pre>
 */
public final class Main {
  /**
   * pgjdbc's own warning about a URL it cannot parse quotes the URL whole, password and all
   * ({@code JDBC URL contains too many / characters: jdbc:postgresql://app:ab/cd@db}); txbox names
   * what is wrong itself, masked. Held here: java.util.logging keeps its loggers weakly.
   */
  private static final Logger PGJDBC_DRIVER_LOG = Logger.getLogger("org.postgresql.Driver");

  static {
    PGJDBC_DRIVER_LOG.setLevel(Level.OFF);
  }

  private Main() {}

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs a command and returns its exit code: 0 done, 1 failed, 2 bad settings. */
  public static int run(String... args) {
    return run(new TxboxCommand(), args);
  }

  /**
   * Runs picocli {@code command} (a {@code @Command}-annotated object, such as the demo's) with
   * txbox's conventions: option defaults from {@code TXBOX_*} variables and the {@code --config}
   * file, unknown settings refused, errors as one line naming the option. Returns its exit code.
   */
  public static int run(Object command, String... args) {
    return run(command, System.getenv(), new PrintWriter(System.out, true), new PrintWriter(System.err, true), args);
  }

  /** As {@link #run(Object, String...)}, with the environment and the output streams given: for tests. */
  static int run(Object command, Map<String, String> environment, PrintWriter out, PrintWriter err, String... args) {
    try {
      CommandLine cli = commandLine(command, environment, args);
      cli.setOut(out);
      cli.setErr(err);
      return cli.execute(args);
    } catch (IllegalArgumentException e) { // the --config file cannot be read
      err.println("txbox: " + TerminalText.line(Secrets.mask(e.getMessage()), TerminalText.ERROR_LIMIT));
      return 2;
    }
  }

  /**
   * The command line {@link #run(Object, String...)} executes, with option defaults from {@code
   * environment} instead of the process's: for tests, and to set its output streams.
   *
   * @throws IllegalArgumentException when the {@code --config} file cannot be read
   */
  public static CommandLine commandLine(Object command, Map<String, String> environment, String... args) {
    return TxboxCommand.commandLine(command, args, environment);
  }
}
