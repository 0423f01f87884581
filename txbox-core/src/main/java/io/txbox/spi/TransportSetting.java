package io.txbox.spi;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One setting of a {@link Transport}: its name, the kind of value it takes, which of the broker's
 * clients reads it, its default and what it means. Each front end names it its own way from the
 * transport's name and the setting's: {@code --nats-ack-timeout} and
 * {@code TXBOX_NATS_ACK_TIMEOUT} on the command line, {@code txbox.nats.ack-timeout} in Spring.
 *
 * <pre>{@code
 * new TransportSetting("ack-timeout", Kind.DURATION, Role.PUBLISHER, null,
 *     "How long a batch waits for its PubAcks. Default: 10s.");
 * }</pre>
 *
 * @param name the setting's name, lower case with dashes ({@code ack-timeout})
 * @param kind the value it takes
 * @param role which client reads it
 * @param defaultValue the value taken when none is given, as text; null when the client's builder
 *     decides (its description says what it picks)
 * @param description one or two sentences for a user: what it does, its default
 */
public record TransportSetting(String name, Kind kind, Role role, String defaultValue, String description) {
  private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9]*(-[a-z0-9]+)*");

  /** The kind of value a setting takes; every value arrives as text. */
  public enum Kind {
    /** Any text. */
    TEXT,
    /** A duration: {@code 500ms}, {@code 10s}, {@code 5m}, {@code 1h}, {@code 1d} or ISO-8601 ({@code PT10S}). */
    DURATION,
    /** A whole number. */
    INTEGER,
    /** {@code true} or {@code false}. */
    FLAG,
    /** Client properties, each {@code name=value}: handed to the broker's client as they are. */
    PROPERTIES
  }

  /** Which of the broker's clients reads a setting, and so which front ends offer it. */
  public enum Role {
    /** Where the broker is: both clients read it; the command line requires it. */
    ADDRESS,
    /** Read by both the publisher and the subscriber. */
    CLIENTS,
    /** Read by the publisher only. */
    PUBLISHER,
    /** Read by the subscriber only. */
    SUBSCRIBER,
    /** A secret both clients read: never offered as a command-line flag, never shown. */
    CREDENTIAL
  }

  /** Checks the setting. */
  public TransportSetting {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(role, "role");
    Objects.requireNonNull(description, "description");
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("setting name must be lower case words joined by dashes, was " + name);
    }
    if (kind == Kind.PROPERTIES && defaultValue != null) {
      throw new IllegalArgumentException("setting " + name + " takes client properties and has no default");
    }
  }

  /** Whether the publisher reads it. */
  public boolean publishes() {
    return role != Role.SUBSCRIBER;
  }

  /** Whether the subscriber reads it. */
  public boolean subscribes() {
    return role != Role.PUBLISHER;
  }
}
