package io.txbox.spring.internal;

import io.txbox.spi.Subscriber;
import io.txbox.spring.InboxListener;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.springframework.context.SmartLifecycle;

/**
 * The subscribers of the application's {@link InboxListener} beans: started with the context,
 * each closed (finishing and acknowledging the messages in hand) when it stops.
 */
public final class InboxListeners implements SmartLifecycle {
  private final Map<String, ContextBound<Subscriber>> byConsumer = new LinkedHashMap<>();

  public InboxListeners(List<InboxListener> listeners, Function<InboxListener, Subscriber> start) {
    for (InboxListener listener : listeners) {
      ContextBound<Subscriber> previous = byConsumer.put(listener.consumer(),
          new ContextBound<>("subscriber of " + listener.consumer(), () -> start.apply(listener)));
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
    ContextBound<Subscriber> bound = byConsumer.get(consumer);
    return bound == null ? Optional.empty() : bound.current();
  }

  @Override
  public void start() {
    byConsumer.values().forEach(ContextBound::start);
  }

  @Override
  public void stop() {
    byConsumer.values().forEach(ContextBound::stop);
  }

  @Override
  public boolean isRunning() {
    return byConsumer.values().stream().anyMatch(ContextBound::isRunning);
  }
}
