package io.txbox.demo;

import io.txbox.examples.ShopSchema;
import io.txbox.examples.orders.OrderService;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * Places the demo's orders at a steady rate, one order per transaction. Each writer thread owns
 * the SKUs {@code n} with {@code n % threads == thread}: two transactions never place orders for
 * one SKU at once, so the per-SKU order sequence is also the order of the transactions' ids,
 * which is the order the relay keeps (see README, "Order per key").
 */
final class OrderWriter {
  private final DataSource dataSource;
  private final OrderService orders;
  private final int products;
  private final AtomicLong written = new AtomicLong();

  OrderWriter(DataSource dataSource, OrderService orders, int products) {
    this.dataSource = dataSource;
    this.orders = orders;
    this.products = products;
  }

  long written() {
    return written.get();
  }

  /** Writes {@code events} orders at {@code perSecond} over {@code threads} threads; returns when done. */
  void write(long events, int perSecond, int threads) throws Exception {
    List<Thread> writers = new ArrayList<>();
    List<Exception> failures = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      long share = events / threads + (t < events % threads ? 1 : 0);
      int thread = t;
      Thread writer = new Thread(() -> {
        try {
          writeShare(thread, threads, share, TimeUnit.SECONDS.toNanos(threads) / perSecond);
        } catch (Exception e) {
          synchronized (failures) {
            failures.add(e);
          }
        }
      }, "order-writer-" + t);
      writer.start();
      writers.add(writer);
    }
    for (Thread w : writers) {
      w.join();
    }
    if (!failures.isEmpty()) {
      throw failures.get(0);
    }
  }

  private void writeShare(int thread, int threads, long share, long intervalNanos) throws SQLException {
    long next = System.nanoTime();
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      for (long i = 0; i < share; i++) {
        LockSupport.parkNanos(next - System.nanoTime());
        next += intervalNanos;
        orders.place(tx, "customer-" + thread, ShopSchema.sku(ownSku(thread, threads)),
            1 + ThreadLocalRandom.current().nextInt(3));
        tx.commit();
        written.incrementAndGet();
      }
    }
  }

  private int ownSku(int thread, int threads) {
    int own = (products - thread + threads - 1) / threads;
    return thread + threads * ThreadLocalRandom.current().nextInt(own);
  }
}
