package io.txbox.jackson;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.txbox.Message;
import io.txbox.UnprocessableMessageException;
import io.txbox.spi.EventWriter;
import java.io.IOException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

/**
 * The application's event types: for each, its name, current version, Java class, destination and
 * key, and the upcasters that bring every older version up to the current one. It writes events
 * as JSON with the application's {@link ObjectMapper} and reads any known version back as the
 * current class.
 *
 * <pre>{@code
 * EventTypes types = EventTypes.builder(objectMapper)
 *     .type("OrderPlaced", 3, OrderPlaced.class, "orders", OrderPlaced::sku)
 *     .upcast("OrderPlaced", 1, e -> { e.set("customerId", e.remove("customer")); return e; })
 *     .upcast("OrderPlaced", 2, e -> e.put("currency", "EUR"))
 *     .build();
 * Outbox outbox = Outbox.builder(store).events(types).build();
 * outbox.sendEvent(tx, new OrderPlaced(...));          // or outbox.send(tx, types.toMessage(...))
 * OrderPlaced order = types.read(message, OrderPlaced.class); // any version, as version 3
 * }</pre>
 *
 * <p>An event of a version newer than the registered one is not guessed at: reading it throws an
 * {@link UnprocessableMessageException} that names both versions, which a consumer dead-letters
 * at once while its other keys go on.
 */
public final class EventTypes implements EventWriter {
  /** The content type of the events it writes. */
  public static final String CONTENT_TYPE = "application/json";

  /** One registered type. */
  private record Registered(String name, int version, Class<?> javaClass, String destination,
      Function<Object, String> key) {}

  private final ObjectMapper mapper;
  private final Map<String, Registered> byName;
  private final Map<Class<?>, Registered> byClass;
  private final Map<String, Map<Integer, Upcaster>> upcasters;
  private final Map<String, String> renamed;

  private EventTypes(Builder b) {
    this.mapper = b.mapper;
    this.byName = Map.copyOf(b.byName);
    this.byClass = Map.copyOf(b.byClass);
    this.upcasters = Map.copyOf(b.upcasters);
    this.renamed = Map.copyOf(b.renamed);
  }

  /** A builder writing and reading with {@code mapper}, the application's own where it has one. */
  public static Builder builder(ObjectMapper mapper) {
    return new Builder(Objects.requireNonNull(mapper, "mapper must not be null"));
  }

  /**
   * {@code event} as a message: JSON body, its type's name, current version, destination and key.
   *
   * @throws IllegalArgumentException when its class is not registered, or Jackson cannot write it
   */
  @Override
  public Message toMessage(Object event) {
    Registered type = byClass.get(event.getClass());
    if (type == null) {
      throw new IllegalArgumentException("event class " + event.getClass().getName() + " is not registered:"
          + " add .type(name, version, " + event.getClass().getSimpleName() + ".class, destination, key)");
    }
    try {
      return Message.builder().type(type.name()).version(type.version()).destination(type.destination())
          .key(type.key().apply(event)).payload(mapper.writeValueAsBytes(event), CONTENT_TYPE).build();
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("cannot write " + type.name() + " as JSON: " + e.getOriginalMessage(), e);
    }
  }

  /** The type name a message's type stands for now, after renames. */
  String currentName(String type) {
    return renamed.getOrDefault(type, type);
  }

  /** The registered type names. */
  java.util.Set<String> names() {
    return byName.keySet();
  }

  /** The current version of type {@code name}. */
  int versionOf(String name) {
    return byName.get(name).version();
  }

  /** {@code event} written as JSON and read back, as a consumer of today's version would. */
  Object writeAndRead(Object event) throws IOException {
    return mapper.readValue(mapper.writeValueAsBytes(event), event.getClass());
  }

  /** The type name {@code javaClass} is registered under. */
  String nameOf(Class<?> javaClass) {
    Registered type = byClass.get(javaClass);
    if (type == null) {
      throw new IllegalArgumentException("event class " + javaClass.getName() + " is not registered in the types");
    }
    return type.name();
  }

  /**
   * The message's body as the current version of its type: upcast from the version it was
   * written in, then read as the registered class.
   *
   * @throws UnprocessableMessageException when the type is unknown, the version newer than the
   *     registered one, or the body cannot be read as the class
   */
  public Object read(Message message) {
    String name = currentName(message.type());
    Registered type = byName.get(name);
    if (type == null) {
      throw new UnprocessableMessageException("event " + message.id() + " is of type " + message.type()
          + ", which this consumer has not registered");
    }
    if (message.version() > type.version()) {
      throw new UnprocessableMessageException("event " + message.id() + " is " + name + " version " + message.version()
          + ", newer than version " + type.version() + " that this consumer knows: deploy a consumer that knows"
          + " version " + message.version() + ", then retry the dead letter");
    }
    ObjectNode tree = upcast(message, name, type, tree(message, name));
    try {
      return mapper.treeToValue(tree, type.javaClass());
    } catch (JsonProcessingException e) {
      throw new UnprocessableMessageException("event " + message.id() + " (" + name + " version " + message.version()
          + ", upcast to " + type.version() + ") cannot be read as " + type.javaClass().getSimpleName() + ": "
          + e.getOriginalMessage(), e);
    }
  }

  /**
   * As {@link #read(Message)}, for a message that must be an {@code eventClass}.
   *
   * @throws UnprocessableMessageException also when the message is of another type
   */
  public <T> T read(Message message, Class<T> eventClass) {
    Object event = read(message);
    if (!eventClass.isInstance(event)) {
      throw new UnprocessableMessageException("event " + message.id() + " is of type " + message.type()
          + ", not " + nameOf(eventClass) + " as expected");
    }
    return eventClass.cast(event);
  }

  private ObjectNode tree(Message message, String name) {
    JsonNode node;
    try {
      node = mapper.readTree(message.payload());
    } catch (IOException e) {
      throw new UnprocessableMessageException("event " + message.id() + " (" + name + ") is not JSON: " + e.getMessage(), e);
    }
    if (!(node instanceof ObjectNode object)) {
      throw new UnprocessableMessageException("event " + message.id() + " (" + name + ") is not a JSON object");
    }
    return object;
  }

  private ObjectNode upcast(Message message, String name, Registered type, ObjectNode tree) {
    ObjectNode event = tree;
    for (int version = message.version(); version < type.version(); version++) {
      try {
        event = upcasters.get(name).get(version).upcast(event);
      } catch (RuntimeException e) {
        throw new UnprocessableMessageException("event " + message.id() + ": the upcaster of " + name + " from version "
            + version + " to " + (version + 1) + " failed: " + e, e);
      }
    }
    return event;
  }

  /** Registers types and upcasters; {@link #build} checks that every old version can be brought up. */
  public static final class Builder {
    private final ObjectMapper mapper;
    private final Map<String, Registered> byName = new LinkedHashMap<>();
    private final Map<Class<?>, Registered> byClass = new HashMap<>();
    private final Map<String, Map<Integer, Upcaster>> upcasters = new HashMap<>();
    private final Map<String, String> renamed = new HashMap<>();

    private Builder(ObjectMapper mapper) {
      this.mapper = mapper;
    }

    /**
     * Registers event type {@code name} at its current {@code version}, read and written as
     * {@code javaClass}, sent to {@code destination} with the key {@code key} gives.
     */
    @SuppressWarnings("unchecked")
    public <T> Builder type(String name, int version, Class<T> javaClass, String destination,
        Function<? super T, String> key) {
      Objects.requireNonNull(javaClass, "javaClass must not be null");
      Objects.requireNonNull(key, "key must not be null (return null for events without a key)");
      if (version < 1) {
        throw new IllegalArgumentException("version of " + name + " must be >= 1, was " + version);
      }
      if (byName.containsKey(name) || byClass.containsKey(javaClass)) {
        throw new IllegalArgumentException("type " + name + " or class " + javaClass.getName() + " is registered twice");
      }
      Registered type = new Registered(name, version, javaClass, destination, e -> key.apply((T) e));
      byName.put(name, type);
      byClass.put(javaClass, type);
      return this;
    }

    /** Registers the upcaster of type {@code name} from {@code fromVersion} to {@code fromVersion + 1}. */
    public Builder upcast(String name, int fromVersion, Upcaster upcaster) {
      Objects.requireNonNull(upcaster, "upcaster must not be null");
      if (upcasters.computeIfAbsent(name, n -> new HashMap<>()).putIfAbsent(fromVersion, upcaster) != null) {
        throw new IllegalArgumentException("type " + name + " has two upcasters from version " + fromVersion);
      }
      return this;
    }

    /** Events written as type {@code oldName} are read as type {@code newName}, version for version. */
    public Builder renamed(String oldName, String newName) {
      renamed.put(oldName, newName);
      return this;
    }

    /**
     * The registry.
     *
     * @throws IllegalArgumentException naming the type and the missing or stray upcaster
     */
    public EventTypes build() {
      for (Registered type : byName.values()) {
        Map<Integer, Upcaster> chain = upcasters.getOrDefault(type.name(), Map.of());
        for (int v = 1; v < type.version(); v++) {
          if (!chain.containsKey(v)) {
            throw new IllegalArgumentException("type " + type.name() + " is at version " + type.version()
                + " but has no upcaster from version " + v + " to " + (v + 1) + ": add .upcast(\"" + type.name()
                + "\", " + v + ", ...)");
          }
        }
        chain.keySet().stream().filter(v -> v < 1 || v >= type.version()).findFirst().ifPresent(v -> {
          throw new IllegalArgumentException("type " + type.name() + " has an upcaster from version " + v
              + ", but its versions are 1 to " + type.version());
        });
      }
      upcasters.keySet().stream().filter(name -> !byName.containsKey(name)).findFirst().ifPresent(name -> {
        throw new IllegalArgumentException("upcaster for unregistered type " + name);
      });
      renamed.forEach((from, to) -> {
        if (!byName.containsKey(to)) {
          throw new IllegalArgumentException("type " + from + " is renamed to unregistered type " + to);
        }
      });
      return new EventTypes(this);
    }
  }
}
