package io.txbox.bench;

import io.txbox.spi.Publisher;

/**
 * A broker the relay benchmark starts for itself, with its own client's publish rate as the
 * reference: the same number of 300-byte messages, each acknowledged by the broker.
 */
interface BenchBroker extends AutoCloseable {
  /** The destination the relay's backlog goes to. */
  String RELAY_DESTINATION = "bench-relay";

  /** What the reference is, for the results. */
  String reference();

  /** Messages per second the broker's own client publishes and gets acknowledged. */
  double bareRate(int messages) throws Exception;

  /** A publisher for the relay, with default settings. */
  Publisher publisher();

  @Override
  void close() throws Exception;
}
