package io.txbox.testkit;

/**
 * A broker a test started itself and may therefore kill and start again, to prove that what runs
 * against it survives an outage. Shared brokers, the machine's among them, are never stopped.
 *
 * <pre>{@code
 * try (StoppableBroker broker = NatsServer.start()) {
 *   broker.stop();     // SIGKILL, data on disk stays
 *   broker.restart();  // same port, same data
 * }
 * }</pre>
 */
public interface StoppableBroker extends AutoCloseable {

  /** Where clients connect: {@code host:port} for Kafka, a {@code nats://} URL for NATS. */
  String address();

  /** Kills the broker at once (SIGKILL), as in a crash; data on disk stays. */
  void stop();

  /** Starts the broker again on the same port with the same data, and waits until it serves. */
  void restart();

  /**
   * The end of the broker's own log, for a failed assertion to show what the broker did; empty
   * when it keeps none of its own.
   */
  default String recentLog() {
    return "";
  }

  /** Stops the broker and deletes its data. */
  @Override
  void close();
}
