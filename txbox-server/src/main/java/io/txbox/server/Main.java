package io.txbox.server;

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
  private Main() {}

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs a command and returns its exit code: 0 done, 1 failed, 2 bad settings. */
  public static int run(String... args) {
    try {
      return TxboxCommand.commandLine(args).execute(args);
    } catch (IllegalArgumentException e) {
      System.err.println("txbox: " + e.getMessage());
      return 2;
    }
  }
}
