package io.txbox.internal;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/** Lets the relay loop sleep until a timeout or until someone says new events were committed. */
final class WakeUp {
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition signalled = lock.newCondition();
  private boolean pending;

  void signal() {
    lock.lock();
    try {
      pending = true;
      signalled.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** Waits up to {@code timeout}; returns whether a signal ended the wait. */
  boolean await(Duration timeout) throws InterruptedException {
    lock.lock();
    try {
      long nanos = timeout.toNanos();
      while (!pending && nanos > 0) {
        nanos = signalled.awaitNanos(nanos);
      }
      boolean woken = pending;
      pending = false;
      return woken;
    } finally {
      lock.unlock();
    }
  }
}
