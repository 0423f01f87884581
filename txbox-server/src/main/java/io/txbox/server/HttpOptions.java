package io.txbox.server;

import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.txbox.micrometer.OutboxTag;
import java.net.InetSocketAddress;
import java.util.Optional;
import java.util.function.Supplier;
import picocli.CommandLine.Option;

/**
 * Where a process txbox runs alone serves its metrics and health probes ({@link OpsEndpoint}).
 * On by default, on port {@value #DEFAULT_PORT}, the port Prometheus's exporters conventionally
 * take for the JVM.
 *
 * <pre>{@code
 * @Mixin HttpOptions http;
 * PrometheusMeterRegistry registry = HttpOptions.registry();
 * HttpOptions.bindProcessMeters(registry, store.outboxName());
 * Optional<OpsEndpoint> endpoint = http.start("0.0.0.0", registry, live, ready);
 * }</pre>
 */
final class HttpOptions {
  static final int DEFAULT_PORT = 9464;

  @Option(names = "--http", negatable = true, defaultValue = "true", fallbackValue = "true",
      description = "Serve /metrics (Prometheus text), /health/live and /health/ready over HTTP. --no-http"
          + " (TXBOX_HTTP=false) turns it off. Default: on.")
  boolean enabled;

  @Option(names = "--http-port", defaultValue = "" + DEFAULT_PORT,
      description = "Port of the metrics and health endpoint, 0 for any free one (logged). Default: ${DEFAULT-VALUE}.")
  int port;

  @Option(names = "--http-address",
      description = "Address the endpoint listens on: 127.0.0.1 keeps it to this host, 0.0.0.0 opens it to any."
          + " Default: 0.0.0.0 for txbox relay (to be scraped), 127.0.0.1 for txbox console.")
  String address;

  /** Options picocli fills in. */
  HttpOptions() {}

  /** Checks the settings before anything starts. */
  void check() {
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("invalid --http-port (TXBOX_HTTP_PORT): must be between 0 and 65535, was "
          + port);
    }
  }

  /** An empty Prometheus registry: meters are bound once the outbox is known ({@link #bindProcessMeters}). */
  static PrometheusMeterRegistry registry() {
    return new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  }

  /**
   * Tags the outbox's meters with {@code outbox} (as the starter does) and binds the JVM's and the
   * process's meters: called before any meter is registered, so that the tag is on every one.
   */
  static void bindProcessMeters(PrometheusMeterRegistry registry, String outbox) {
    registry.config().meterFilter(OutboxTag.filter(outbox));
    new JvmMemoryMetrics().bindTo(registry);
    new JvmGcMetrics().bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ClassLoaderMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
    new FileDescriptorMetrics().bindTo(registry);
  }

  /** The endpoint, serving on {@code --http-address} or else {@code defaultAddress}; empty with {@code --no-http}. */
  Optional<OpsEndpoint> start(String defaultAddress, PrometheusMeterRegistry registry,
      Supplier<OpsEndpoint.Verdict> live, Supplier<OpsEndpoint.Verdict> ready) {
    check();
    if (!enabled) {
      return Optional.empty();
    }
    String host = address == null ? defaultAddress : address;
    return Optional.of(OpsEndpoint.start(new InetSocketAddress(host, port), registry, live, ready));
  }
}
