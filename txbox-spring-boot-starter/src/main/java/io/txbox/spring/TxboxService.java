package io.txbox.spring;

import java.util.Optional;
import java.util.function.Supplier;
import org.springframework.context.SmartLifecycle;

/**
 * A txbox service (the relay, the logical relay, the janitor, a subscriber) that starts when the
 * application context has started and is closed, draining its work in hand, when the context
 * stops: before the DataSource and the broker clients go away. Each start builds a new service,
 * since a closed one stays closed, so an application reaches the running one through
 * {@link #current()}. The starter's beans are {@code TxboxService<Relay>} (table relay),
 * {@code TxboxService<LogicalRelay>} and {@code TxboxService<Janitor>}.
 *
 * <pre>{@code
 * @Autowired TxboxService<Relay> relay;
 *
 * Set<Integer> mine = relay.current().map(Relay::ownedBuckets).orElse(Set.of());
 * }</pre>
 *
 * @param <T> the service
 */
public final class TxboxService<T extends AutoCloseable> implements SmartLifecycle {
  private final String name;
  private final Supplier<T> start;
  private volatile T running;

  /**
   * @param name what the service is, for errors
   * @param start builds and starts the service
   */
  public TxboxService(String name, Supplier<T> start) {
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
