package io.txbox.testkit;

import io.txbox.testkit.internal.ChildMain;
import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Starts a main class in a child JVM with this JVM's class path, output to a file: for tests and
 * benchmarks that must kill a process (a relay, a subscriber, a broker) with a real signal. The
 * child exits when this JVM goes away, even by SIGKILL.
 *
 * <pre>{@code
 * Process relay = ChildProcess.start(List.of("-Xmx256m"), MyRelay.class.getName(), List.of(), log);
 * relay.destroyForcibly();   // SIGKILL
 * }</pre>
 */
public final class ChildProcess {
  private ChildProcess() {}

  /** Starts {@code mainClass} with {@code jvmOptions}; the child exits when this JVM goes away. */
  public static Process start(List<String> jvmOptions, String mainClass, List<String> args, Path output)
      throws IOException {
    return start(jvmOptions, System.getProperty("java.class.path"), mainClass, args, output);
  }

  /**
   * Starts {@code mainClass} on a class path of its own (testkit's classes are added): for a
   * server whose libraries must not follow the test's, such as the Kafka broker.
   */
  public static Process start(List<String> jvmOptions, String classPath, String mainClass, List<String> args,
      Path output) throws IOException {
    return start(jvmOptions, classPath, mainClass, args, java.util.Map.of(), output);
  }

  /**
   * Starts {@code mainClass} on a class path of its own, with {@code environment} added to this
   * JVM's environment: for a program configured by variables, as in a container.
   */
  public static Process start(List<String> jvmOptions, String classPath, String mainClass, List<String> args,
      java.util.Map<String, String> environment, Path output) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    String testJvm = System.getProperty(TestDatabase.JVM_PROPERTY);
    if (testJvm != null) { // a child that opens the test database must open this JVM's own
      command.add("-D" + TestDatabase.JVM_PROPERTY + "=" + testJvm);
    }
    command.addAll(jvmOptions);
    command.add("-cp");
    command.add(classPath.equals(System.getProperty("java.class.path"))
        ? classPath : testkitClasses() + File.pathSeparator + classPath);
    command.add(ChildMain.class.getName());
    command.add(mainClass);
    command.addAll(args);
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(output.toFile()));
    builder.environment().putAll(environment);
    return builder.start();
  }

  /** Runs {@code mainClass} to completion; fails with its output when it exits non-zero. */
  public static void run(String mainClass, List<String> args, Path output) throws IOException, InterruptedException {
    run(System.getProperty("java.class.path"), mainClass, args, output);
  }

  /** Runs {@code mainClass} on a class path of its own to completion; fails with its output when it exits non-zero. */
  public static void run(String classPath, String mainClass, List<String> args, Path output)
      throws IOException, InterruptedException {
    Process p = start(List.of("-Xmx256m"), classPath, mainClass, args, output);
    int code = p.waitFor();
    if (code != 0) {
      throw new IOException(mainClass + " exited with " + code + ": " + java.nio.file.Files.readString(output));
    }
  }

  private static String testkitClasses() {
    try {
      return Path.of(ChildMain.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    } catch (URISyntaxException e) {
      throw new IllegalStateException("cannot locate txbox-testkit's classes", e);
    }
  }
}
