package io.txbox.spring.internal;

import java.util.Optional;
import java.util.function.Supplier;
import org.springframework.context.SmartLifecycle;

/**
 * A txbox service (relay, janitor, subscriber) that starts when the application context has
 * started and is closed, draining its work in hand, when the context stops: before the DataSource
 * and the broker clients go away. Each start builds a new service, since a closed one stays closed.
 *
 * @param <T> the service
 */
public final class ContextBound<T extends AutoCloseable> implements SmartLifecycle {
  private final String name;
  private final Supplier<T> start;
  private volatile T running;

  /**
   * @param name what the service is, for errors
   * @param start builds and starts the service
   */
  public ContextBound(String name, Supplier<T> start) {
    this.name = name;
    this.start = start;
  }

  /** The service, while the context runs. */
  public Optional<T> current() {
    return Optional.ofNullable(running);
  }

  @Override
  public synchronized void start() {
    if (running == null) {
      running = start.get();
    }
  }

  @Override
  public synchronized void stop() {
    T service = running;
    running = null;
    if (service != null) {
      try {
        service.close();
      } catch (Exception e) {
        throw new IllegalStateException("could not close the " + name, e);
      }
    }
  }

  @Override
  public boolean isRunning() {
    return running != null;
  }
}
