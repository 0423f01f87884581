package io.txbox.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;

/**
 * A drain of {@code events} by a relay in a JVM started for it, timed from the start of the
 * relay's {@code main}: its first acknowledgement, and its last. The rate after the first shows
 * what start-up costs. The CPU figures, in µs per event, are the relay process's from its start,
 * the whole host's over the same time (on two cores a drain is bound by the CPU every process of
 * it uses), and the relay JVM's JIT compiling.
 *
 * <pre>{@code
 * ColdDrain drain = ColdDrain.of(events, firstLine, drainedLine, relayProcess, hostBefore);
 * stop the relay; then drain = drain.compiled(relayLog);
 * }</pre>
 */
record ColdDrain(int events, long firstMillis, long lastMillis, double relayCpuMicros, double hostCpuMicros,
    double compileMicros) {

  /** From the relay's "first acknowledged in X ms" and "drained N in X ms" lines, with the CPU used so far. */
  static ColdDrain of(int events, Matcher first, Matcher drained, Process relay, Duration hostBefore) {
    double perEvent = 1000.0 * events;
    return new ColdDrain(events, Long.parseLong(first.group(1)), Long.parseLong(drained.group(2)),
        DebeziumBench.cpu(relay).toNanos() / perEvent, HostCpu.busy().minus(hostBefore).toNanos() / perEvent,
        Double.NaN);
  }

  /**
   * With the time the relay's JVM spent compiling, which it prints on exit ({@link CompileTime}):
   * that time runs on until the exit, a little past the drain, so it is an upper bound.
   */
  ColdDrain compiled(Path log) throws IOException {
    double micros = CompileTime.read(log).map(d -> d.toNanos() / (1000.0 * events)).orElse(Double.NaN);
    return new ColdDrain(events, firstMillis, lastMillis, relayCpuMicros, hostCpuMicros, micros);
  }

  double rate() {
    return events / (lastMillis / 1000.0);
  }

  double rateAfterFirst() {
    return (events - 1) / (Math.max(1, lastMillis - firstMillis) / 1000.0);
  }
}
