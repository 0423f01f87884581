package io.txbox.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The CPU time every process of this host has used since boot, from Linux's {@code /proc/stat}:
 * the difference over a drain is what the whole drain cost (the relay, the walsender, the Kafka
 * broker and the benchmark itself), to set beside what the relay's own process used.
 *
 * <pre>{@code
 * Duration before = HostCpu.busy();
 * ... drain ...
 * Duration used = HostCpu.busy().minus(before);
 * }</pre>
 */
final class HostCpu {
  /** The kernel's clock ticks per second for /proc/stat (USER_HZ), 100 on Linux's usual builds. */
  private static final long TICKS_PER_SECOND = 100;

  private HostCpu() {}

  /** Busy CPU time of all cores since boot: user, nice, system, irq, softirq and steal; not idle or iowait. */
  static Duration busy() {
    try {
      String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
      long ticks = 0;
      for (int i : new int[] {1, 2, 3, 6, 7, 8}) {
        ticks += Long.parseLong(f[i]);
      }
      return Duration.ofMillis(ticks * 1000 / TICKS_PER_SECOND);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read /proc/stat: the host CPU figures need Linux", e);
    }
  }
}
