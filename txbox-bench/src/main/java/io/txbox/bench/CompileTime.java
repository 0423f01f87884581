package io.txbox.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The time a JVM spent compiling with its JIT, as it prints it on exit with {@link #JVM_OPTIONS}:
 * in a relay that starts cold for one drain, much of its CPU goes there rather than to the events.
 *
 * <pre>{@code
 * start the JVM with CompileTime.JVM_OPTIONS, its output into log; stop it; then
 * Optional<Duration> compiling = CompileTime.read(log);
 * }</pre>
 */
final class CompileTime {
  /** Makes HotSpot print its compilers' totals on exit. */
  static final List<String> JVM_OPTIONS = List.of("-XX:+UnlockDiagnosticVMOptions", "-XX:+CITime");
  private static final Pattern TOTAL = Pattern.compile("Total compilation time\\s*:\\s*([\\d.]+) s");

  private CompileTime() {}

  /** The total the JVM printed to {@code log}; empty when it printed none (killed, or not HotSpot). */
  static Optional<Duration> read(Path log) throws IOException {
    Matcher m = TOTAL.matcher(Files.readString(log));
    return m.find() ? Optional.of(Duration.ofNanos((long) (Double.parseDouble(m.group(1)) * 1e9))) : Optional.empty();
  }
}
