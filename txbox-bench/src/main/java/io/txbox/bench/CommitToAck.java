package io.txbox.bench;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.spi.Metrics;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * One latency measurement: writers commit events at a steady pace and stamp each commit; the
 * relay's {@link Metrics#published} callback, which runs after the broker's ack and the
 * checkpoint, stamps the end. The first second is warm-up and not recorded.
 *
 * <pre>{@code
 * CommitToAck run = new CommitToAck(4);
 * try (Relay relay = Relay.builder(store, publisher).metrics(run.stamp()).build().start()) {
 *   run.write(dataSource, outbox, 1_000, 1, 20);
 * }
 * long[] micros = run.sortedMicros();
 * }</pre>
 */
final class CommitToAck {
  private final int writers;
  private final Map<UUID, Long> committed = new ConcurrentHashMap<>();
  private final Map<UUID, Long> acked = new ConcurrentHashMap<>();

  CommitToAck(int writers) {
    this.writers = writers;
  }

  /** The relay's metrics: the moment each event's ack was had. */
  Metrics stamp() {
    return new Metrics() {
      @Override
      public void published(String subscription, List<Message> acknowledged) {
        long now = System.nanoTime();
        acknowledged.forEach(m -> acked.put(m.id(), now));
      }
    };
  }

  /**
   * Stamps {@code id} as arrived at {@code nanos} ({@link System#nanoTime()}), for an end seen
   * elsewhere than in the relay, such as by a consumer; the first arrival counts.
   */
  void seen(UUID id, long nanos) {
    acked.putIfAbsent(id, nanos);
  }

  /** Commits {@code txPerSecond} transactions of {@code eventsPerTx} events a second for {@code seconds}. */
  void write(DataSource dataSource, Outbox outbox, int txPerSecond, int eventsPerTx, int seconds) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    long intervalNanos = 1_000_000_000L * writers / txPerSecond;
    long start = System.nanoTime();
    long end = start + seconds * 1_000_000_000L;
    long recordFrom = start + 1_000_000_000L;
    List<Future<?>> running = new ArrayList<>();
    for (int w = 0; w < writers; w++) {
      long offset = intervalNanos * w / writers;
      running.add(pool.submit(() -> {
        try (Connection c = dataSource.getConnection()) {
          c.setAutoCommit(false);
          for (long next = start + offset; next < end; next += intervalNanos) {
            LockSupport.parkNanos(next - System.nanoTime());
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < eventsPerTx; i++) {
              batch.add(Events.orderPlaced("latency", next));
            }
            outbox.send(c, batch);
            c.commit();
            long now = System.nanoTime();
            if (now >= recordFrom) {
              batch.forEach(m -> committed.put(m.id(), now));
            }
          }
        }
        return null;
      }));
    }
    for (Future<?> writer : running) {
      writer.get();
    }
    pool.shutdown();
  }

  /** Commit-to-ack of every recorded event that was acknowledged, in microseconds, sorted. */
  long[] sortedMicros() {
    List<Long> micros = new ArrayList<>();
    committed.forEach((id, at) -> {
      Long ack = acked.get(id);
      if (ack != null) {
        micros.add(Math.max(0, (ack - at) / 1000));
      }
    });
    return WriteOverhead.sorted(micros);
  }

  /** Whether every event recorded as committed has arrived. */
  boolean allArrived() {
    return acked.keySet().containsAll(committed.keySet());
  }

  /** Events recorded as committed. */
  int committedCount() {
    return committed.size();
  }
}
