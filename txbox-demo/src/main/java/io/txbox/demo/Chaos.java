package io.txbox.demo;

import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * SIGKILLs one of the demo's processes at a random moment, about every {@code interval}, and
 * starts it again 0.5 to 2.5 s later. A killed relay leaves its leases to expire and a batch
 * perhaps half published; a killed inventory service leaves records handled but not committed to
 * Kafka. The demo's report shows what that cost: duplicates, which the inbox absorbs.
 */
final class Chaos {
  private final DemoProcesses processes;
  private final Duration interval;
  private final PrintStream out;
  private final Thread thread;
  private volatile boolean running = true;
  private volatile int kills;
  private volatile Exception failure;

  private Chaos(DemoProcesses processes, Duration interval, PrintStream out) {
    this.processes = processes;
    this.interval = interval;
    this.out = out;
    this.thread = new Thread(this::run, "txbox-demo-chaos");
    this.thread.setDaemon(true);
  }

  static Chaos start(DemoProcesses processes, Duration interval, PrintStream out) {
    Chaos chaos = new Chaos(processes, interval, out);
    chaos.thread.start();
    return chaos;
  }

  int kills() {
    return kills;
  }

  /** Stops killing; a process that is down when this is called is started again first. */
  void stop() throws Exception {
    running = false;
    thread.join();
    if (failure != null) {
      throw failure;
    }
  }

  private void run() {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    try {
      while (pause(random.nextLong(interval.toMillis() / 2, interval.toMillis() * 3 / 2 + 1))) {
        List<String> names = processes.names();
        String victim = names.get(random.nextInt(names.size()));
        long down = random.nextLong(500, 2_500);
        processes.kill(victim);
        kills++;
        out.printf("chaos: SIGKILL %s, back in %.1f s%n", victim, down / 1000.0);
        pause(down);
        processes.restart(victim); // also when stopping: the demo ends with every process up
      }
    } catch (Exception e) {
      failure = e;
    }
  }

  /** Sleeps up to {@code millis}; false once chaos is stopped. */
  private boolean pause(long millis) throws InterruptedException {
    long end = System.currentTimeMillis() + millis;
    while (running && System.currentTimeMillis() < end) {
      Thread.sleep(Math.min(50, Math.max(1, end - System.currentTimeMillis())));
    }
    return running;
  }
}
