package io.txbox.testkit;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * Runs a server that refuses root (PostgreSQL, PgBouncer) as the {@code postgres} user when the
 * test runs as root, as CI does; as the test's own user otherwise.
 */
final class ServiceUser {
  /** The user Debian's PostgreSQL packages create. */
  static final String NAME = "postgres";

  private ServiceUser() {}

  static boolean isRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  /** What goes before a server's command line: {@code runuser -u postgres --} as root, else nothing. */
  static List<String> prefix() {
    return isRoot() ? List.of("runuser", "-u", NAME, "--") : List.of();
  }

  /** Gives {@code directory} and what it holds to the user the server runs as. */
  static void handOver(Path directory) throws IOException {
    if (!isRoot()) {
      return;
    }
    try {
      Process chown = new ProcessBuilder("chown", "-R", NAME + ":" + NAME, directory.toString())
          .redirectErrorStream(true).start();
      String output = new String(chown.getInputStream().readAllBytes());
      if (chown.waitFor() != 0) {
        throw new IOException("chown " + directory + " to " + NAME + " failed: " + output);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while handing " + directory + " to " + NAME, e);
    }
  }
}
