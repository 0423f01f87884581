package io.txbox;

import io.txbox.internal.UuidV7;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * One event written to the outbox and relayed to a broker.
 *
 * <p>Build one with {@link #builder()}; each {@code build()} fills in a fresh UUIDv7 {@code id} (the
 * id consumers dedupe on) and the creation time, unless they were set:
 *
 * <pre>{@code
 * Message placed = Message.builder()
 *     .type("OrderPlaced")
 *     .destination("orders")          // the Kafka topic, unless a router says otherwise
 *     .key(order.id())                // order is kept per key
 *     .payload(json, "application/json")
 *     .header("traceparent", traceparent)
 *     .build();
 * }</pre>
 *
 * @param id unique id of the event; consumers record it in their inbox
 * @param type the event type, such as {@code OrderPlaced}
 * @param version the version of the event's schema, 1 or more
 * @param key the partition key: events with the same key are delivered in the order they were
 *     written; {@code null} means no ordering is needed
 * @param destination where the event goes: a topic, exchange or subject
 * @param payload the event body, copied in and out
 * @param contentType the payload's media type
 * @param headers user headers such as trace context; never null
 * @param createdAt when the event was created, to the microsecond
 * @param availableAt the earliest time it may be delivered, or {@code null} for at once
 */
public record Message(
    UUID id,
    String type,
    int version,
    String key,
    String destination,
    byte[] payload,
    String contentType,
    Map<String, String> headers,
    Instant createdAt,
    Instant availableAt) {

  /** Longest accepted type, key, destination or content type, in characters. */
  public static final int MAX_NAME_LENGTH = 255;

  /** Content type used when none is given. */
  public static final String DEFAULT_CONTENT_TYPE = "application/octet-stream";

  /** Checks every field; see {@link Builder} for the rules. */
  public Message {
    Objects.requireNonNull(id, "id must not be null");
    type = requireName("type", type);
    if (version < 1) {
      throw new IllegalArgumentException("version must be >= 1, was " + version);
    }
    if (key != null && key.length() > MAX_NAME_LENGTH) {
      throw new IllegalArgumentException("key must be at most " + MAX_NAME_LENGTH + " characters");
    }
    destination = requireName("destination", destination);
    payload = Objects.requireNonNull(payload, "payload must not be null (use an empty array)").clone();
    contentType = requireName("contentType", contentType);
    headers = Map.copyOf(Objects.requireNonNull(headers, "headers must not be null"));
    // Databases keep microseconds; a message must read back equal to what was written.
    createdAt = Objects.requireNonNull(createdAt, "createdAt must not be null").truncatedTo(ChronoUnit.MICROS);
    availableAt = availableAt == null ? null : availableAt.truncatedTo(ChronoUnit.MICROS);
  }

  private static String requireName(String field, String value) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(field + " must not be null or blank");
    }
    if (value.length() > MAX_NAME_LENGTH) {
      throw new IllegalArgumentException(
          field + " must be at most " + MAX_NAME_LENGTH + " characters, was " + value.length());
    }
    return value;
  }

  /**
   * This message with {@code added} headers, which replace headers of the same name: for trace
   * context that is added on the way, such as the relay's publish span.
   */
  public Message withHeaders(Map<String, String> added) {
    if (added.isEmpty()) {
      return this;
    }
    Map<String, String> merged = new LinkedHashMap<>(headers);
    merged.putAll(added);
    return new Message(id, type, version, key, destination, payload, contentType, merged, createdAt, availableAt);
  }

  /**
   * A new event id as the builder assigns one: a version 7 UUID, ordered by time, so ids written
   * together sit together in an index.
   */
  public static UUID newId() {
    return UuidV7.next();
  }

  /** A copy of the payload. */
  @Override
  public byte[] payload() {
    return payload.clone();
  }

  /** The payload's length in bytes, without copying it. */
  public int payloadSize() {
    return payload.length;
  }

  /** Starts a message with a fresh UUIDv7 id and the current time. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Message m
        && id.equals(m.id)
        && type.equals(m.type)
        && version == m.version
        && Objects.equals(key, m.key)
        && destination.equals(m.destination)
        && Arrays.equals(payload, m.payload)
        && contentType.equals(m.contentType)
        && headers.equals(m.headers)
        && createdAt.equals(m.createdAt)
        && Objects.equals(availableAt, m.availableAt);
  }

  @Override
  public int hashCode() {
    return id.hashCode();
  }

  @Override
  public String toString() {
    return "Message[id=" + id + ", type=" + type + ", version=" + version + ", key=" + key
        + ", destination=" + destination + ", payload=" + payload.length + " bytes]";
  }

  /** Builds a {@link Message}. {@code type}, {@code destination} and {@code payload} are required. */
  public static final class Builder {
    private UUID id;
    private String type;
    private int version = 1;
    private String key;
    private String destination;
    private byte[] payload;
    private String contentType = DEFAULT_CONTENT_TYPE;
    private final Map<String, String> headers = new LinkedHashMap<>();
    private Instant createdAt;
    private Duration delay = Duration.ZERO;

    private Builder() {}

    /**
     * Overrides the generated UUIDv7 id, for example to keep an id from an upstream system. Every
     * message built afterwards has this id: consumers drop all but the first as duplicates.
     */
    public Builder id(UUID id) {
      this.id = id;
      return this;
    }

    /** The event type, such as {@code OrderPlaced}. Required. */
    public Builder type(String type) {
      this.type = type;
      return this;
    }

    /** The schema version of the payload. Default 1. */
    public Builder version(int version) {
      this.version = version;
      return this;
    }

    /** The partition key; order is kept per key. Default none. */
    public Builder key(String key) {
      this.key = key;
      return this;
    }

    /** The topic, exchange or subject. Required. */
    public Builder destination(String destination) {
      this.destination = destination;
      return this;
    }

    /** The body, with content type {@value Message#DEFAULT_CONTENT_TYPE}. Required. */
    public Builder payload(byte[] payload) {
      this.payload = payload;
      return this;
    }

    /** The body and its media type. */
    public Builder payload(byte[] payload, String contentType) {
      this.payload = payload;
      this.contentType = contentType;
      return this;
    }

    /** The body as text, encoded in UTF-8, and its media type: {@code payload(json, "application/json")}. */
    public Builder payload(String text, String contentType) {
      return payload(Objects.requireNonNull(text, "payload must not be null").getBytes(StandardCharsets.UTF_8),
          contentType);
    }

    /** Adds a header; a later value for the same name replaces an earlier one. */
    public Builder header(String name, String value) {
      if (name == null || name.isBlank() || value == null) {
        throw new IllegalArgumentException("header name must not be blank and value not null");
      }
      headers.put(name, value);
      return this;
    }

    /** Adds every header of the map. */
    public Builder headers(Map<String, String> headers) {
      headers.forEach(this::header);
      return this;
    }

    /** Overrides the creation time. Default: the time of {@link #build()}. */
    public Builder createdAt(Instant createdAt) {
      this.createdAt = createdAt;
      return this;
    }

    /**
     * Delays delivery. The relay keeps the order of the log, so a delayed event also holds back
     * the events written after it in the same bucket until it is due: use short delays.
     */
    public Builder delay(Duration delay) {
      if (delay == null || delay.isNegative()) {
        throw new IllegalArgumentException("delay must be zero or positive, was " + delay);
      }
      this.delay = delay;
      return this;
    }

    /**
     * Checks the fields and builds the message. A builder can build several messages: each gets
     * its own id and creation time, unless {@link #id} or {@link #createdAt} were set.
     */
    public Message build() {
      Instant created = createdAt != null ? createdAt : Instant.now();
      Instant availableAt = delay.isZero() ? null : created.plus(delay);
      return new Message(id != null ? id : UuidV7.next(), type, version, key, destination, payload,
          contentType, headers, created, availableAt);
    }
  }
}
