package io.txbox.testkit.internal;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.util.Arrays;

/**
 * Runs another main class in a child JVM and exits when the parent goes away: the parent holds
 * the child's standard input open, so end-of-input means the parent died, even by SIGKILL.
 * Without this, a killed test run would leave brokers behind.
 */
public final class ChildMain {
  private ChildMain() {}

  public static void main(String[] args) throws Exception {
    Thread watchdog = new Thread(ChildMain::exitWhenParentGoes, "parent-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
    Method main = Class.forName(args[0]).getMethod("main", String[].class);
    main.invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
  }

  private static void exitWhenParentGoes() {
    try (InputStream in = System.in) {
      while (in.read() != -1) {
        // the parent never writes; any byte is ignored
      }
    } catch (IOException e) {
      // a broken pipe means the same: the parent is gone
    }
    // exit, not halt: Process.destroy() sends SIGTERM and closes this pipe at the same moment,
    // and the shutdown hooks that SIGTERM started must be allowed to finish.
    System.exit(0);
  }
}
