package io.txbox.spring;

import io.txbox.spi.Subscriber;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.springframework.context.SmartLifecycle;

/**
 * The subscribers of the application's {@link InboxListener} beans: started with the context,
 * each closed (finishing and acknowledging the messages in hand) when it stops. The starter's
 * bean {@code txboxInboxListeners}, there when the application has an {@code InboxListener}.
 *
 * <pre>{@code
 * @Autowired InboxListeners listeners;
 *
 * boolean troubled = listeners.subscriber("billing").map(Subscriber::isTroubled).orElse(false);
 * }</pre>
 */
public final class InboxListeners implements SmartLifecycle {
  private final Map<String, TxboxService<Subscriber>> byConsumer = new LinkedHashMap<>();

  /**
   * @param listeners the application's listeners, each with a consumer name of its own
   * @param start builds and starts the subscriber of a listener
   * @throws IllegalStateException when two listeners share a consumer name
   */
  public InboxListeners(List<InboxListener> listeners, Function<InboxListener, Subscriber> start) {
    for (InboxListener listener : listeners) {
      TxboxService<Subscriber> previous = byConsumer.put(listener.consumer(),
          new TxboxService<>("subscriber of " + listener.consumer(), () -> start.apply(listener)));
      if (previous != null) {
        throw new IllegalStateException("two InboxListener beans share the consumer name '"
            + listener.consumer() + "': give each its own, since the name scopes deduplication");
      }
    }
  }

  /** The consumers' names. */
  public List<String> consumers() {
    return List.copyOf(byConsumer.keySet());
  }

  /** The running subscriber of {@code consumer}. */
  public Optional<Subscriber> subscriber(String consumer) {
    TxboxService<Subscriber> bound = byConsumer.get(consumer);
    return bound == null ? Optional.empty() : bound.current();
  }

  @Override
  public void start() {
    byConsumer.values().forEach(TxboxService::start);
  }

  @Override
  public void stop() {
    byConsumer.values().forEach(TxboxService::stop);
  }

  @Override
  public boolean isRunning() {
    return byConsumer.values().stream().anyMatch(TxboxService::isRunning);
  }
}
