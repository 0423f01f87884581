package io.txbox.kafka.internal;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Asks the broker whether a topic exists before the first send to it. Without this, a send to a
 * missing topic blocks for {@code max.block.ms} and then fails like an outage would; with it, a
 * missing topic is a permanent error found in milliseconds.
 */
public final class TopicCheck implements AutoCloseable {
  /** What the broker says of a topic. */
  public enum Answer { EXISTS, MISSING, UNKNOWN }

  private final Supplier<Admin> adminFactory;
  private final Set<String> known = ConcurrentHashMap.newKeySet();
  private Admin admin;

  public TopicCheck(Supplier<Admin> adminFactory) {
    this.adminFactory = adminFactory;
  }

  /** Whether {@code topic} exists; UNKNOWN when the broker cannot be asked. */
  public synchronized Answer check(String topic) {
    if (known.contains(topic)) {
      return Answer.EXISTS;
    }
    try {
      Map<String, ?> found = admin().describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS);
      if (found.containsKey(topic)) {
        known.add(topic);
        return Answer.EXISTS;
      }
      return Answer.MISSING;
    } catch (ExecutionException e) {
      return e.getCause() instanceof UnknownTopicOrPartitionException ? Answer.MISSING : Answer.UNKNOWN;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Answer.UNKNOWN;
    } catch (Exception e) {
      return Answer.UNKNOWN;
    }
  }

  /** Forgets a topic, so that the next send to it is checked again. */
  public void forget(String topic) {
    known.remove(topic);
  }

  private Admin admin() {
    if (admin == null) {
      admin = adminFactory.get();
    }
    return admin;
  }

  @Override
  public synchronized void close() {
    if (admin != null) {
      admin.close();
    }
  }
}
