package io.txbox.demo;

import java.util.List;

/**
 * The broker the demo's events travel through, set up for one run: where the order service writes
 * them, and how the relay and inventory processes reach it. A broker the demo started itself goes
 * away with it; on a broker that was given, the demo removes what it created.
 */
interface DemoBroker extends AutoCloseable {
  /** The broker's name, for progress lines. */
  String name();

  /** The outbox destination of the demo's events. */
  String destination();

  /** The {@code txbox relay} options that publish to it. */
  List<String> relayArgs();

  /** The {@code InventoryApp} options that consume from it, for the process named {@code member}. */
  List<String> inventoryArgs(String member);

  /** JVM options every relay and inventory process needs for this broker (credentials, say). */
  default List<String> jvmOptions() {
    return List.of();
  }

  /** Events the broker holds now, for progress (RabbitMQ: those still queued). */
  long held();

  /** What {@link #held()} counts, for progress. */
  String heldLabel();

  @Override
  void close() throws Exception;
}
