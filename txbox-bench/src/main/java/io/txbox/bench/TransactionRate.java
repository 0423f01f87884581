package io.txbox.bench;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;

/** Transactions per second of a unit of work, run on a number of threads for a while. */
final class TransactionRate {
  /** The work of one transaction, on a connection in manual-commit mode; the caller commits. */
  @FunctionalInterface
  interface Work {
    void run(Connection transaction, long n) throws Exception;
  }

  private TransactionRate() {}

  static double measure(DataSource dataSource, int threads, int seconds, Work work) throws Exception {
    AtomicBoolean running = new AtomicBoolean(true);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<Long>> counts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      counts.add(pool.submit(() -> runUntilStopped(dataSource, work, running)));
    }
    long start = System.nanoTime();
    Thread.sleep(seconds * 1000L);
    running.set(false);
    long total = 0;
    for (Future<Long> count : counts) {
      total += count.get();
    }
    double elapsed = (System.nanoTime() - start) / 1e9;
    pool.shutdown();
    return total / elapsed;
  }

  private static long runUntilStopped(DataSource dataSource, Work work, AtomicBoolean running) throws Exception {
    long n = 0;
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      while (running.get()) {
        work.run(c, n++);
        c.commit();
      }
    } catch (SQLException e) {
      throw new IllegalStateException("a writer failed after " + n + " transactions", e);
    }
    return n;
  }
}
