package io.txbox.rabbitmq.internal;

import java.util.HashMap;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The outstanding publisher confirms of one batch on one channel: which publish sequence number
 * belongs to which message of the batch, and what became of each. The broker's answers arrive on
 * the connection's thread; {@link #await} waits for them on the relay's.
 */
public final class Confirms {
  private final NavigableMap<Long, Integer> pending = new TreeMap<>();
  private final Map<String, Integer> indexById = new HashMap<>();
  private final Map<Integer, Exception> failures = new HashMap<>();

  /** Message {@code index} of the batch, with {@code messageId}, is published as {@code seqNo}. */
  public synchronized void sent(long seqNo, int index, String messageId) {
    pending.put(seqNo, index);
    indexById.put(messageId, index);
  }

  /** The broker confirmed {@code seqNo}, and every earlier one when {@code multiple}. */
  public synchronized void acked(long seqNo, boolean multiple) {
    settle(seqNo, multiple, null);
  }

  /** The broker refused {@code seqNo}, and every earlier one when {@code multiple}. */
  public synchronized void nacked(long seqNo, boolean multiple) {
    settle(seqNo, multiple, new IllegalStateException("RabbitMQ refused the message (basic.nack)"));
  }

  /**
   * A message came back unroutable: it fails with {@code error} whatever its confirm says. The
   * broker returns a message before it confirms it, so the batch is still waiting.
   */
  public synchronized void returned(String messageId, Exception error) {
    Integer index = indexById.get(messageId);
    if (index != null) {
      failures.put(index, error);
    }
  }

  /** The channel closed: whatever is unanswered failed with {@code error}. */
  public synchronized void closed(Exception error) {
    pending.values().forEach(index -> failures.putIfAbsent(index, error));
    pending.clear();
    notifyAll();
  }

  private void settle(long seqNo, boolean multiple, Exception error) {
    Map<Long, Integer> settled = multiple ? pending.headMap(seqNo, true) : pending.subMap(seqNo, true, seqNo, true);
    if (error != null) {
      settled.values().forEach(index -> failures.putIfAbsent(index, error));
    }
    settled.clear();
    notifyAll();
  }

  /** Waits until every message is answered or {@code timeoutMillis} passed; the rest time out. */
  public synchronized Map<Integer, Exception> await(long timeoutMillis) throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    while (!pending.isEmpty()) {
      long left = deadline - System.currentTimeMillis();
      if (left <= 0) {
        closed(new java.util.concurrent.TimeoutException("no confirm from RabbitMQ within " + timeoutMillis + " ms"));
        break;
      }
      wait(left);
    }
    return new HashMap<>(failures);
  }
}
