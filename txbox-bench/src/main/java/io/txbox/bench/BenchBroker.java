package io.txbox.bench;

import io.txbox.spi.Publisher;

/**
 * A broker the relay benchmark starts for itself, with its own client's publish rate as the
 * reference: the same number of 300-byte messages, each acknowledged by the broker.
 */
interface BenchBroker extends AutoCloseable {
  /** The destination the relay's backlog goes to. */
  String RELAY_DESTINATION = "bench-relay";

  /** The destination the relay's backlog goes to on this broker. */
  default String relayDestination() {
    return RELAY_DESTINATION;
  }

  /** What the reference is, for the results. */
  String reference();

  /** Messages per second the broker's own client publishes and gets acknowledged. */
  double bareRate(int messages) throws Exception;

  /**
   * The same, with each message carrying what the relay's carry (its id for deduplication, type,
   * version, key, creation time and a traceparent), or NaN where the reference cannot send them.
   */
  default double bareRateWithRelayHeaders(int messages) throws Exception {
    return Double.NaN;
  }

  /** A publisher for the relay, with default settings. */
  Publisher publisher();

  /**
   * A publisher for the relay with an older wire format kept for compatibility, to drain the same
   * backlog again side by side; null where the broker has none.
   */
  default Publisher publisherInFormerWireFormat() {
    return null;
  }

  @Override
  void close() throws Exception;
}
