package io.txbox.testkit;

import io.txbox.Message;
import io.txbox.Receipt;
import io.txbox.spi.PermanentPublishException;
import io.txbox.spi.PublishResult;
import io.txbox.spi.Publisher;
import io.txbox.spi.SendScope;
import io.txbox.spi.Subscriber;
import io.txbox.spi.Transport;
import io.txbox.spi.TransportSetting;
import io.txbox.spi.TransportSetting.Kind;
import io.txbox.spi.TransportSetting.Role;
import io.txbox.spi.TransportSettings;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A broker that lives in the test's JVM, as a fifth broker module would: registered through
 * {@code META-INF/services/io.txbox.spi.Transport} by the test modules that use it, and found by
 * the Spring starter and the {@code txbox} command like the real ones ({@code --broker memory}).
 * It proves that a broker needs no change outside its own module; it is no broker to test delivery
 * guarantees with: its subscriber takes each message once, in the order published, and retries a
 * failing one every 100 ms without end.
 *
 * <pre>{@code
 * txbox relay --broker memory --memory-space orders ...
 * assertThat(MemoryTransport.published("orders")).hasSize(3);
 * }</pre>
 */
public final class MemoryTransport implements Transport {
  private static final Map<String, List<Message>> SPACES = new ConcurrentHashMap<>();
  private static final Map<String, Map<String, String>> CLIENT_PROPERTIES = new ConcurrentHashMap<>();
  private static final List<TransportSetting> SETTINGS = List.of(
      new TransportSetting("space", Kind.TEXT, Role.ADDRESS, "default",
          "The in-memory space messages go to: the publishers and subscribers of one space see the same messages."),
      new TransportSetting("max-message-size", Kind.INTEGER, Role.PUBLISHER, null,
          "Largest payload in bytes; a larger message is refused for good. Default: no limit."),
      new TransportSetting("token", Kind.TEXT, Role.CREDENTIAL, null,
          "A secret the broker would ask for: never a flag, never shown."),
      new TransportSetting("client", Kind.PROPERTIES, Role.CLIENTS, null,
          "Client properties, name=value: kept for tests to read with clientProperties(space)."));

  /** For {@link java.util.ServiceLoader}. */
  public MemoryTransport() {}

  /** What was published to {@code space}, in order. */
  public static List<Message> published(String space) {
    List<Message> messages = SPACES.getOrDefault(space, List.of());
    synchronized (messages) {
      return List.copyOf(messages);
    }
  }

  /** The client properties the last publisher of {@code space} was given. */
  public static Map<String, String> clientProperties(String space) {
    return CLIENT_PROPERTIES.getOrDefault(space, Map.of());
  }

  @Override
  public String name() {
    return "memory";
  }

  @Override
  public List<TransportSetting> settings() {
    return SETTINGS;
  }

  @Override
  public Publisher publisher(TransportSettings settings, SendScope sendScope) {
    String space = settings.text("space").orElseThrow();
    int maxSize = settings.integer("max-message-size").orElse(Integer.MAX_VALUE);
    if (maxSize < 1) {
      throw settings.refused("max-message-size", "it must be 1 or more, was " + maxSize);
    }
    CLIENT_PROPERTIES.put(space, Map.copyOf(settings.properties("client")));
    List<Message> messages = space(space);
    return new Publisher() {
      @Override
      public PublishResult publish(List<Message> batch) {
        Map<Integer, Exception> failures = new HashMap<>();
        synchronized (messages) {
          for (int i = 0; i < batch.size(); i++) {
            if (batch.get(i).payloadSize() > maxSize) {
              failures.put(i, new PermanentPublishException("payload over " + maxSize + " bytes"));
            } else {
              messages.add(batch.get(i));
            }
          }
          messages.notifyAll(); // subscribers waiting for more
        }
        return PublishResult.of(batch.size(), failures);
      }

      @Override
      public void close() {}
    };
  }

  @Override
  public Subscriber subscriber(TransportSettings settings, Subscription subscription) {
    return new MemorySubscriber(space(settings.text("space").orElseThrow()), subscription);
  }

  /** The messages of {@code name}, the space's lock and its signal of new ones. */
  private static List<Message> space(String name) {
    return SPACES.computeIfAbsent(name, n -> new ArrayList<>());
  }

  /** Takes the space's messages bound for its sources, one at a time, in order. */
  private static final class MemorySubscriber implements Subscriber {
    /** Longest wait for a message, and the wait before a failed one is tried again. */
    private static final long WAIT_MILLIS = 100;
    private final List<Message> space;
    private final Subscription subscription;
    private final AtomicLong processed = new AtomicLong();
    private final AtomicLong duplicates = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    private volatile boolean closed;
    private Thread thread;

    MemorySubscriber(List<Message> space, Subscription subscription) {
      this.space = space;
      this.subscription = subscription;
    }

    @Override
    public Subscriber start() {
      thread = new Thread(this::run, "memory-subscriber-" + subscription.intake().consumer());
      thread.setDaemon(true);
      thread.start();
      return this;
    }

    private void run() {
      int next = 0;
      while (!closed) {
        Message message = awaitMessage(next);
        if (message == null) {
          continue; // none yet: look again, or stop when closed
        }
        if (!subscription.sources().contains(message.destination()) || take(message)) {
          next++;
        } else {
          synchronized (space) {
            await(); // the failed message again after the wait, or at once on close
          }
        }
      }
    }

    /** The space's message at {@code index}; null if none arrived within the wait. */
    private Message awaitMessage(int index) {
      synchronized (space) {
        if (space.size() <= index && !closed) {
          await();
        }
        return space.size() > index ? space.get(index) : null;
      }
    }

    /** Waits on the space, holding its lock: a publish or a close wakes it. */
    private void await() {
      try {
        space.wait(WAIT_MILLIS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        closed = true;
      }
    }

    private boolean take(Message message) {
      try {
        Receipt receipt = subscription.intake().take(message);
        (receipt == Receipt.DUPLICATE ? duplicates : processed).incrementAndGet();
        return true;
      } catch (Exception e) {
        failures.incrementAndGet();
        return false;
      }
    }

    @Override
    public long processed() {
      return processed.get();
    }

    @Override
    public long duplicates() {
      return duplicates.get();
    }

    @Override
    public long parked() {
      return 0;
    }

    @Override
    public long deadLettered() {
      return 0;
    }

    @Override
    public long rejected() {
      return 0;
    }

    @Override
    public long failures() {
      return failures.get();
    }

    @Override
    public boolean isTroubled() {
      return false;
    }

    @Override
    public void close() {
      closed = true; // no interrupt: it could cut an intake transaction short
      synchronized (space) {
        space.notifyAll();
      }
      if (thread != null) {
        try {
          thread.join(Math.max(1, subscription.drainTimeout().toMillis())); // join(0) would wait for ever
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }
}
