package io.txbox.server;

import picocli.CommandLine.Option;

/**
 * Who runs a command that changes something, as the audit log records it: the name given with
 * {@code --operator}, and the operating-system user that owns the process (from the process
 * table, so {@code -Duser.name=} cannot change it). Neither proves more than who ran txbox:
 * anyone holding the database credentials can write the audit table directly.
 *
 * <pre>{@code
 * @Mixin OperatorOptions operator;
 * deadLetters.retry(scope, operator.who()); // "alice (os user deploy)"
 * }</pre>
 */
final class OperatorOptions {
  /** Longest {@code --operator} name. */
  static final int MAX_NAME = 64;

  @Option(names = "--operator", description = "Your name for the audit log (a ticket or user id), up to 64"
      + " printable characters; the OS user is recorded with it.")
  String name;

  /** {@code "alice (os user deploy)"}, or {@code "os user deploy"} without {@code --operator}. */
  String who() {
    String osUser = ProcessHandle.current().info().user().orElse("unknown");
    if (name == null) {
      return "os user " + osUser;
    }
    if (name.isBlank() || name.length() > MAX_NAME || !name.equals(TerminalText.of(name))) {
      throw new IllegalArgumentException("invalid --operator (TXBOX_OPERATOR): give 1 to " + MAX_NAME
          + " printable characters, without control characters or line breaks");
    }
    return name + " (os user " + osUser + ")";
  }
}
